"""bitsandbytes 4-bit weights and LoRA adapter slots as vLLM holds them
(service/sizing/vllm/bitsandbytes.py and lora.py: ``bnb_matrix_bytes``, ``bnb_layer_bytes``,
``lora_layer_bytes``...).

Every number below is worked by hand in its comment from the rules the engine cites: NF4 packs
two values a byte, one absmax per 64 values (nested: a uint8 plus an fp32 per 256 of them, a
1 KiB nested code and a 4-byte offset; fp32 from 0.9.2), a 64-byte code per matrix, and the
caching allocator's 512-byte blocks for those small tensors.
"""

import msgspec
import pytest

from service.sizing.errors import SizingError
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.vllm.bitsandbytes import (
    bnb_layer_bytes,
    bnb_loaded_bytes,
    bnb_matrix_bytes,
    bnb_skipped_layers,
)
from service.sizing.vllm.config import EngineConfig, for_release, quantization_of
from service.sizing.vllm.defaults import EngineDefaults
from service.sizing.vllm.lora import (
    lora_embedding_bytes,
    lora_layer_bytes,
    lora_vocab_rows,
    punica_metadata_bytes,
)
from service.sizing.vllm.predict import predict_vllm
from service.sizing.vllm.shapes import ties_embeddings
from service.sizing.vllm.weights import offloaded_layer_bytes
from tests.unit.sizing.specs import DEEPSEEK_V3, LLAMA_8B

T4 = GpuSpec(slug="t4", memory_bytes=16_000_000_000, hbm_bytes_per_s=320_000_000_000)
# Qwen2.5-0.5B (tied embeddings): 151,936 x 896 = 136,134,656 embedding parameters; 24 layers
# of 14,909,440 linear weights (q 802,816, k and v 114,688, o 802,816, gate/up/down 4,358,144
# each), 1,152 q/k/v biases and 1,792 norm weights; a final 896 norm: 494,032,768.
QWEN25_05B = ModelSpec(
    slug="qwen2.5-0.5b",
    total_params=494_032_768,
    layers=24,
    hidden_size=896,
    intermediate_size=4864,
    attention_heads=14,
    kv_heads=2,
    vocab_size=151936,
    max_context_tokens=32768,
)
NF4 = EngineConfig(quantization="bnb-nf4", bnb_absmax="nested", era="v0")


def test_bitsandbytes_is_the_nf4_layout_and_each_release_its_scales() -> None:
    assert quantization_of("bitsandbytes") == "bnb-nf4"
    # vLLM PR #19742 (in 0.9.2) dequantises the nested absmax while loading.
    assert [
        for_release(EngineConfig(), v).bnb_absmax
        for v in ("0.7.2", "0.9.1", "0.9.2", "0.10.0", None)
    ] == [
        "nested",
        "nested",
        "fp32",
        "fp32",
        "fp32",
    ]
    # LoRA slots enter the weights line from 0.8.0 (vLLM PR #14469); the extra vocabulary is
    # 256 rows until 0.12.
    assert [for_release(EngineConfig(), v).lora_in_weights for v in ("0.7.3", "0.8.0", None)] == [
        False,
        True,
        True,
    ]
    assert [
        for_release(EngineConfig(), v).lora_extra_vocab_size for v in ("0.10.0", "0.12.0", None)
    ] == [256, 0, 0]


def test_one_nf4_matrix_keeps_its_packed_values_and_quant_state() -> None:
    # Llama 3.1 8B's q_proj, 4,096 x 4,096 = 16,777,216 values: 8,388,608 B packed; 262,144
    # blocks of 64, nested: 262,144 B of uint8 absmax, 1,024 fp32 nested scales (4,096 B), the
    # 1 KiB nested code, the offset (512 B block) and the 16-value code (512 B block):
    # 8,388,608 + 262,144 + 4,096 + 1,024 + 512 + 512 = 8,656,896.
    assert bnb_matrix_bytes(16_777_216, "nested") == 8_656_896
    # fp32 scales: 8,388,608 + 262,144 x 4 + 512 = 9,437,696.
    assert bnb_matrix_bytes(16_777_216, "fp32") == 9_437_696
    # Qwen2.5-0.5B's k_proj, 896 x 128 = 114,688 values, nested: 57,344 packed, 1,792 uint8
    # (4 blocks of 512 = 2,048), 7 fp32 (512), 1,024 + 512 + 512: 61,952.
    assert bnb_matrix_bytes(114_688, "nested") == 61_952


def test_a_llama_layer_and_the_whole_model_in_nf4() -> None:
    # One Llama 3.1 8B layer: q and o 8,656,896 each; k and v (4,194,304 values) 2,097,152 +
    # 65,536 + 1,024 + 1,024 + 512 + 512 = 2,165,760 each; gate, up, down (58,720,256 values)
    # 29,360,128 + 917,504 + 14,336 + 1,024 + 512 + 512 = 30,294,016 each:
    # 2 x 8,656,896 + 2 x 2,165,760 + 3 x 30,294,016 = 112,527,360.
    layers = bnb_layer_bytes(LLAMA_8B, NF4)
    assert layers == [112_527_360] * 32
    # The rest stays 16-bit: 8,030,261,248 - 32 x 218,103,808 linear = 1,050,939,392
    # parameters (embedding, head, norms) = 2,101,878,784 B; with 32 x 112,527,360 =
    # 3,600,875,520: 5,702,754,304 B.
    assert bnb_loaded_bytes(LLAMA_8B, NF4) == 5_702_754_304


def test_lora_slots_for_rank_32_on_llama_8b() -> None:
    lora = msgspec.structs.replace(NF4, enable_lora=True, max_lora_rank=32, lora_embeddings=True)
    # Per layer and slot (max_loras 1, 16-bit): qkv A 3 x 32 x 4,096 = 393,216, B 32 x 6,144 =
    # 196,608; o A 32 x 4,096, B 4,096 x 32 (262,144); gate_up A 2 x 32 x 4,096 = 262,144, B
    # 2 x 14,336 x 32 = 917,504; down A 32 x 14,336 = 458,752, B 4,096 x 32 = 131,072:
    # 2,621,440 values = 5,242,880 B; 32 layers: 167,772,160 B.
    assert lora_layer_bytes(LLAMA_8B, lora) == 5_242_880
    # Embedding wrapper: 256 x 4,096 + (128,256 + 256) x 32 + 4,096 x 32 = 5,292,032 values;
    # logits wrapper: 32 x 4,096 + 128,512 x 32 (128,512 is a multiple of 256) + 256 x 4,096 =
    # 5,292,032: 10,584,064 B each.
    assert lora_embedding_bytes(LLAMA_8B, lora) == (10_584_064, 10_584_064)
    # The model itself grows by 256 rows in the embedding (128,256 + 256 x 1, padded to 64)
    # and in the untied LM head (128,256 + 256, padded to 256).
    assert lora_vocab_rows(LLAMA_8B, lora) == (256, 256)
    assert not ties_embeddings(LLAMA_8B) and ties_embeddings(QWEN25_05B)
    # Two slots double every slot tensor and the embedding's extra rows (2 x 256).
    two = msgspec.structs.replace(lora, max_loras=2)
    assert lora_layer_bytes(LLAMA_8B, two) == 10_485_760
    assert lora_vocab_rows(LLAMA_8B, two) == (512, 256)


def test_punica_index_buffers() -> None:
    # 512 batched tokens, 160 sequences, one slot: three int64 token vectors (4,096 B each),
    # the 2-row one (8,192), three int64 sequence vectors (1,280 B -> 1,536); the token meta:
    # two int32 vectors (2,048 each) and three of 2, 2 and 3 int32 (512 each); the prompt
    # meta: two of 640 B (1,024 each) and the same three: 12,288 + 8,192 + 4,608 + 5,632 +
    # 3,584 = 34,304.
    d = EngineDefaults(
        max_model_len=512,
        max_num_batched_tokens=512,
        max_num_seqs=160,
        gpu_memory_utilization=0.6,
        rule="",
    )
    assert punica_metadata_bytes(NF4, d) == 34_304


def _t4_llama(**flags: object) -> EngineConfig:
    # The Unsloth Colab run (vLLM 0.7.2 V0, T4, 14.74 GiB seen by torch).
    base = msgspec.structs.replace(
        NF4,
        max_model_len=512,
        max_num_batched_tokens=512,
        max_num_seqs=160,
        gpu_memory_utilization=0.6,
        gpu_total_bytes=round(14.74 * 2**30),
        enable_lora=True,
        max_lora_rank=32,
        lora_embeddings=True,
        lora_in_weights=False,
    )
    return msgspec.structs.replace(base, **flags)


def test_before_0_8_the_lora_slots_are_outside_the_weights_and_the_budget() -> None:
    # 5,702,754,304 + the rope cache 131,072 x 128 x 2 = 33,554,432 + the extra vocabulary
    # rows 2 x 256 x 4,096 x 2 = 4,194,304: 5,740,503,040 B = 5.3463 GiB (the log: 5.3541).
    p = predict_vllm(LLAMA_8B, T4, _t4_llama())
    assert p.per_gpu.weights_bytes == 5_740_503_040
    # From 0.8 the slots are in: 167,772,160 + 2 x 10,584,064 + 34,304 = 188,974,592 B more,
    # taken from the KV budget.
    q = predict_vllm(LLAMA_8B, T4, _t4_llama(lora_in_weights=True))
    assert q.per_gpu.weights_bytes - p.per_gpu.weights_bytes == 188_974_592
    assert p.per_gpu.kv_cache_bytes - q.per_gpu.kv_cache_bytes == 188_974_592


def test_unsloth_dynamic_quants_keep_the_skipped_blocks_16_bit() -> None:
    skips = [
        "lm_head",
        "multi_modal_projector",
        "model.layers.0.self_attn",
        "model.layers.0.mlp",
        "model.layers.2.mlp",
        "model.layers.3.mlp",
        "model.layers.21.mlp",
        "model.layers.0.self_attn.q_proj",  # one projection of a fused module: no vLLM prefix
    ]
    attention, mlp = bnb_skipped_layers(skips, 24)
    assert (attention, mlp) == ((0,), (0, 2, 3, 21))
    with pytest.raises(SizingError):
        bnb_skipped_layers(["model.layers.24.mlp"], 24)
    config = msgspec.structs.replace(
        NF4, bnb_absmax="fp32", bnb_skip_attention_layers=attention, bnb_skip_mlp_layers=mlp
    )
    # fp32 scales. q and o (802,816 values): 401,408 + 12,544 x 4 = 50,176 + 512 = 452,096;
    # k and v (114,688): 57,344 + 7,168 + 512 = 65,024; attention 1,034,240. gate, up, down
    # (4,358,144): 2,179,072 + 272,384 + 512 = 2,451,968; MLP 7,355,904. A quantised layer:
    # 8,390,144. Layer 0 all 16-bit: (1,835,008 + 13,074,432) x 2 = 29,818,880; layers 2, 3
    # and 21: 1,034,240 + 26,148,864 = 27,183,104.
    layers = bnb_layer_bytes(QWEN25_05B, config)
    assert layers[:4] == [29_818_880, 8_390_144, 27_183_104, 27_183_104]
    assert layers[21] == 27_183_104
    assert sum(layers) == 29_818_880 + 3 * 27_183_104 + 20 * 8_390_144
    # The tied embedding, biases and norms: 494,032,768 - 357,826,560 = 136,206,208 x 2.
    assert bnb_loaded_bytes(QWEN25_05B, config) == 279_171_072 + 272_412_416


def test_qwen_05b_bnb_with_lora_rank_8_on_0_10() -> None:
    # Qwen2 has no LoRA embedding modules. Rank 8 per layer: qkv 3 x 8 x 896 + 8 x 1,152,
    # o 8 x 896 + 896 x 8, gate_up 2 x 8 x 896 + 2 x 4,864 x 8, down 8 x 4,864 + 896 x 8 =
    # 183,296 values = 366,592 B.
    config = msgspec.structs.replace(
        NF4,
        bnb_absmax="fp32",
        bnb_skip_attention_layers=(0,),
        bnb_skip_mlp_layers=(0, 2, 3, 21),
        enable_lora=True,
        max_lora_rank=8,
        max_model_len=32768,
        max_num_batched_tokens=32768,
        max_num_seqs=320,
        gpu_memory_utilization=0.78,
        gpu_total_bytes=round(47.5 * 2**30),
    )
    assert lora_layer_bytes(QWEN25_05B, config) == 366_592
    # Punica at 32,768 tokens and 320 sequences: 3 x 262,144 + 524,288 + 3 x 2,560 + the token
    # meta (2 x 131,072 + 1,536) + the prompt meta (2 x 1,536 + 1,536) = 1,586,688.
    # Weights: 551,583,488 + rope 32,768 x 64 x 2 = 4,194,304 + 24 x 366,592 = 8,798,208 +
    # 1,586,688 = 566,162,688 B = 0.5273 GiB (the log: 0.5151; with the nested scales Unsloth
    # keeps by patching vLLM's dequantisation out, 552,323,328 B = 0.5144 GiB).
    p = predict_vllm(QWEN25_05B, T4, config)
    assert p.per_gpu.weights_bytes == 566_162_688
    nested = predict_vllm(QWEN25_05B, T4, msgspec.structs.replace(config, bnb_absmax="nested"))
    assert nested.per_gpu.weights_bytes == 552_323_328


def test_bnb_and_lora_refuse_what_they_do_not_model() -> None:
    with pytest.raises(SizingError) as err:
        predict_vllm(DEEPSEEK_V3, T4, NF4)
    assert err.value.field == "quantization"
    with pytest.raises(SizingError) as err:
        predict_vllm(LLAMA_8B, T4, msgspec.structs.replace(NF4, enable_lora=True, max_lora_rank=7))
    assert err.value.field == "max_lora_rank"


def test_releases_from_0_28_have_no_bitsandbytes_to_size() -> None:
    # vLLM 0.28.0 ships no bitsandbytes loader or quantization method: v2-all (0.29 on), 0.28
    # and the v2-runner era with no release named (its last, 0.28) are refused by name; 0.27.1
    # still loads it (fp32 block scales, as from 0.9.2).
    for flags in (
        {"era": "v2-all"},
        {"era": "v2-runner", "release": (0, 28, 0)},
        {"era": "v2-runner"},
    ):
        with pytest.raises(SizingError) as err:
            predict_vllm(LLAMA_8B, T4, msgspec.structs.replace(NF4, **flags))
        assert err.value.field == "quantization" and "0.28 removed" in err.value.message
    # 0.27.1 loads NF4 as the releases from 0.9.2 do: the same bytes as V0 with fp32 scales.
    fp32 = msgspec.structs.replace(NF4, bnb_absmax="fp32")
    older = msgspec.structs.replace(fp32, era="v2-runner", release=(0, 27, 1))
    assert (
        predict_vllm(LLAMA_8B, T4, older).per_gpu.weights_bytes
        == predict_vllm(LLAMA_8B, T4, fp32).per_gpu.weights_bytes
    )


def test_a_negative_layer_share_offloads_nothing() -> None:
    # A tied model's layers give back the embedding's second copy, so a light (quantised)
    # layer's share can be negative: it moves nothing to the CPU, and the budget goes on.
    assert offloaded_layer_bytes([-5, 10, 10], 12) == [0, 10, 2]
