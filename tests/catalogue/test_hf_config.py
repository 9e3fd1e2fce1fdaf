"""Importing a Hugging Face config.json: exact parameter counts and checkpoint bytes.

The fixtures in tests/data/hf_configs/ are written from the fields listed in
docs/reference/models.json (each names its source). Expected counts are the reference's
meta-device counts (transformers 5.24 on torch's meta device, reference/models.md).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from service.catalogue.hf_config import import_config
from service.catalogue.hf_config.families import FAMILIES
from service.catalogue.hf_config.reader import Config
from service.sizing.errors import SizingError
from service.sizing.formats import FORMATS
from service.sizing.params import linear_weights
from service.sizing.weights import decoder_linear_params, model_weight_bytes

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return loaded


# (fixture, total, active incl. embeddings, active excl. the input embedding) from models.md.
REFERENCE = [
    ("llama-3.1-8b", 8_030_261_248, None, None),
    ("llama-3.1-70b", 70_553_706_496, None, None),
    ("llama-3.1-405b", 405_853_388_800, None, None),
    ("gpt-oss-20b", 20_914_757_184, 4_187_440_704, 3_608_307_264),
    ("gpt-oss-120b", 116_829_156_672, 5_711_982_912, 5_132_849_472),
    ("deepseek-v3", 671_026_404_352, 37_552_282_624, 36_625_603_584),
    ("mixtral-8x7b", 46_702_792_704, 12_879_925_248, 12_748_853_248),
    ("mixtral-8x22b", 140_630_071_296, 39_161_468_928, 38_960_142_336),
    ("mistral-7b-v0.3", 7_248_023_552, None, None),
    ("qwen2.5-7b", 7_615_616_512, None, None),
    ("qwen2.5-72b", 72_706_203_648, None, None),
    ("qwen3-8b", 8_190_735_360, None, None),
    ("qwen3-32b", 32_762_123_264, None, None),
    ("qwen3-235b-a22b", 235_093_634_560, 22_190_763_520, 21_568_433_664),
    ("gemma-2-27b", 27_227_128_320, None, None),
    ("gemma-3-27b-text", 27_009_346_304, None, None),
    ("gemma-3-27b-multimodal", 27_432_406_640, None, None),
]


@pytest.mark.parametrize(("name", "total", "active", "active_excl"), REFERENCE)
def test_counts_equal_the_meta_device_reference(
    name: str, total: int, active: int | None, active_excl: int | None
) -> None:
    imported = import_config(config(name), name)
    assert imported.spec.total_params == total
    if active is None:
        # Dense: every parameter is read per token.
        assert imported.spec.resolved_active_params == total
    else:
        assert imported.params.active == active
        assert imported.params.active_excl_input_embedding == active_excl
        assert imported.spec.active_params == active_excl


def test_gemma_3_multimodal_adds_its_vision_tower_and_projector() -> None:
    # models.md: vision tower 416,866,032 + projector 6,194,304 on top of the text model.
    imported = import_config(config("gemma-3-27b-multimodal"), "gemma-3-27b")
    assert imported.vision_params == 416_866_032 + 6_194_304
    assert imported.params.total == 27_009_346_304


def test_architecture_fields_come_from_the_config() -> None:
    deepseek = import_config(config("deepseek-v3"), "deepseek-v3").spec
    assert (deepseek.kv_lora_rank, deepseek.qk_rope_head_dim) == (512, 64)
    assert deepseek.count_layers("mla") == 61 and deepseek.max_context_tokens == 163_840
    assert (deepseek.experts, deepseek.experts_per_token) == (256, 8)
    oss = import_config(config("gpt-oss-120b"), "gpt-oss-120b").spec
    assert (oss.count_layers("sliding"), oss.count_layers("full")) == (18, 18)
    assert oss.sliding_window_tokens == 128 and oss.head_dim == 64
    gemma2 = import_config(config("gemma-2-27b"), "gemma-2-27b").spec
    assert gemma2.layer_types[:2] == ("sliding", "full") and gemma2.count_layers("full") == 23
    gemma3 = import_config(config("gemma-3-27b-text"), "gemma-3-27b").spec
    assert (gemma3.count_layers("sliding"), gemma3.count_layers("full")) == (52, 10)
    qwen = import_config(config("qwen2.5-7b"), "qwen2.5-7b").spec
    assert qwen.count_layers("full") == 28  # use_sliding_window is false
    assert qwen.resolved_head_dim == 128  # 3584 / 28


def test_architecture_is_the_configs_first_architectures_entry() -> None:
    # config.json's architectures[0], the class vLLM instantiates: the Llama fixture names
    # LlamaForCausalLM; the multimodal Gemma 3 its wrapper, Gemma3ForConditionalGeneration (the
    # top-level config, not its text_config); the text-only Gemma 3 fixture has no list.
    def architecture(raw: dict[str, Any]) -> str:
        return import_config(raw, "m").spec.architecture

    assert architecture(config("llama-3.1-8b")) == "LlamaForCausalLM"
    assert architecture(config("gemma-3-27b-multimodal")) == "Gemma3ForConditionalGeneration"
    assert "architectures" not in config("gemma-3-27b-text")
    assert architecture(config("gemma-3-27b-text")) == ""
    # Malformed lists read as unknown rather than failing the import: empty, not a string, a
    # NUL (PostgreSQL text cannot store it).
    llama = config("llama-3.1-8b")
    for wrong in ([], [7], "LlamaForCausalLM", ["Llama\x00ForCausalLM"]):
        assert architecture({**llama, "architectures": wrong}) == ""


def test_gpt_oss_120b_mxfp4_checkpoint_matches_the_published_tensor_bytes() -> None:
    # Experts' weights in MXFP4: 114,661,785,600 values x 4.25 bits = 60,914,073,600 B;
    # everything else (attention, router, expert biases, embeddings, head, norms) BF16:
    # 2,167,371,072 x 2 = 4,334,742,144 B; total 65,248,815,744 B.
    # Published: a public deployment manifest test for openai/gpt-oss-120b asserts
    # weights tensor_bytes == 65248815744 (search index id 59724567210), and a public
    # config-parser test uses the same figure as the checkpoint size (id 57403603525).
    imported = import_config(config("gpt-oss-120b"), "gpt-oss-120b")
    stored = imported.checkpoint
    assert stored.quantized_params == 114_661_785_600
    assert stored.quantized_bytes == 60_914_073_600
    assert stored.unquantized_bytes == 4_334_742_144
    assert stored.total_bytes == 65_248_815_744
    # Planning in MXFP4 uses the stored size, not 116.8e9 x 4.25 / 8 = 62,065,489,482 B.
    assert imported.spec.checkpoint_format == "mxfp4"
    assert model_weight_bytes(imported.spec, FORMATS["mxfp4"]) == 65_248_815_744
    assert model_weight_bytes(imported.spec, FORMATS["bf16"]) == 2 * 116_829_156_672


def test_deepseek_v3_fp8_checkpoint_is_within_headers_of_the_published_size() -> None:
    # Linear layers in FP8 (1 B) with one FP32 scale per 128 x 128 block; router, norms,
    # embedding and head BF16. Main model: 669,065,609,216 FP8 values + 40,838,232 scales x 4 B
    # + 1,960,795,136 BF16 values x 2 B = 673,150,552,416 B. The repository also stores the MTP
    # layer (11,610,067,968 unique parameters) and its copies of the embedding and head:
    # 688,574,778,944 B in all. Published: the deepseek-ai/DeepSeek-V3 safetensors files at
    # commit afb92e1f total 688,586,727,753 B (a public model-facts file, search index id
    # 59118868630; README: "685B ... 671B of the Main Model weights and 14B of the MTP
    # Module"). The 11,948,809 B rest is the 163 files' JSON headers and FP32 router-bias
    # buffers, which are not parameters: under 0.002%.
    index = {"metadata": {"total_size": 688_586_727_753}}
    imported = import_config(config("deepseek-v3"), "deepseek-v3", index=index)
    stored = imported.checkpoint
    assert imported.mtp_params == 11_610_067_968
    assert stored.total_bytes == 688_574_778_944
    assert stored.total_bytes - stored.mtp_bytes == 673_150_552_416
    assert imported.index_total_size_bytes == 688_586_727_753
    assert imported.checkpoint_difference_bytes == 11_948_809
    assert imported.checkpoint_difference_bytes / 688_586_727_753 < 0.00002
    # The served model is the main model, without the MTP layer.
    assert imported.spec.checkpoint_bytes == 673_150_552_416


def test_qwen3_32b_bf16_checkpoint_equals_its_index_total_size() -> None:
    # 32,762,123,264 parameters x 2 B = 65,524,246,528 B, the total_size of Qwen3-32B's
    # 17-shard model.safetensors.index.json quoted in a public write-up (id 36887862677).
    imported = import_config(config("qwen3-32b"), "qwen3-32b")
    assert imported.checkpoint.total_bytes == 65_524_246_528
    assert imported.spec.checkpoint_bytes == 0  # unquantised: plan with any format


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model_type": "falcon"}, "config_json.model_type"),
        ({"model_type": None}, "config_json.model_type"),
        # Unhashable: looking it up among the families raised TypeError, a 500 on /plan.
        ({"model_type": ["llama"]}, "config_json.model_type"),
        ({"model_type": {"name": "llama"}}, "config_json.model_type"),
        # An infinite rotary cache (int() of max_position x 1e308 raised OverflowError: a 500).
        (
            {"rope_scaling": {"rope_type": "linear", "factor": 1e308}},
            "config_json.rope_scaling.factor",
        ),
        ({"num_hidden_layers": None}, "config_json.num_hidden_layers"),
        ({"num_hidden_layers": "80"}, "config_json.num_hidden_layers"),
        ({"hidden_size": 0}, "config_json.hidden_size"),
        ({"num_key_value_heads": 7}, "config_json.kv_heads"),
        ({"tie_word_embeddings": "no"}, "config_json.tie_word_embeddings"),
        (
            {"quantization_config": {"quant_method": "gguf"}},
            "config_json.quantization_config.quant_method",
        ),
        (
            {"quantization_config": {"quant_method": "gptq", "bits": 3}},
            "config_json.quantization_config.bits",
        ),
    ],
)
def test_malformed_or_unsupported_configs_name_the_problem(
    change: dict[str, Any], field: str
) -> None:
    raw = {**config("llama-3.1-70b"), **change}
    with pytest.raises(SizingError) as info:
        import_config(raw, "broken")
    assert info.value.field == field
    if field.endswith("model_type"):
        assert "supported: deepseek_v2, deepseek_v3, gemma, gemma2" in info.value.message


def test_gptq_int4_stores_group_scales_and_zeros() -> None:
    # Llama 3.1 8B: decoder linear layers 6,979,321,856 values (218,103,808 per layer x 32)
    # at 4 + 20/128 = 133/32 bits: 6,979,321,856 x 133 / 256 = 27,262,976 x 133
    # = 3,625,975,808 B; embeddings, head and norms 1,050,939,392 x 2 B.
    raw = {
        **config("llama-3.1-8b"),
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128},
    }
    stored = import_config(raw, "llama-8b-gptq").checkpoint
    assert stored.quantized_params == 6_979_321_856
    assert stored.quantized_bytes == 3_625_975_808
    assert stored.unquantized_bytes == (8_030_261_248 - 6_979_321_856) * 2


LOG_CONFIGS = Path(__file__).resolve().parents[2] / "service/accuracy/cases/vllm_logs/configs"


def log_config(name: str) -> dict[str, Any]:
    raw = json.loads((LOG_CONFIGS / f"{name}.json").read_text())
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def test_bitsandbytes_nf4_keeps_unsloth_skipped_blocks_16_bit() -> None:
    # Unsloth's Qwen2.5-0.5B dynamic 4-bit: NF4 with double quantisation, 4 + 8/64 + 32/16,384
    # = 67,616/16,384 bits a value; layer 0's attention and the MLPs of layers 0, 2, 3 and 21
    # stay 16-bit. Per matrix: q and o 802,816 values x 67,616 / 131,072 = 414,148 B, k and v
    # (114,688) 59,164 B, gate / up / down (4,358,144) 2,248,232 B. Quantised: 23 attention
    # blocks of 2 x 414,148 + 2 x 59,164 = 946,624 and 20 MLPs of 3 x 2,248,232 = 6,744,696:
    # 21,772,352 + 134,893,920 = 156,666,272 B for 23 x 1,835,008 + 20 x 13,074,432 =
    # 303,693,824 values; the other 494,032,768 - 303,693,824 = 190,338,944 parameters at 2 B.
    imported = import_config(
        log_config("qwen2.5-0.5b-instruct-unsloth-bnb-4bit"), "qwen2.5-0.5b-bnb"
    )
    stored = imported.checkpoint
    assert stored.quantized_params == 303_693_824
    assert stored.quantized_bytes == 156_666_272
    assert stored.unquantized_bytes == 190_338_944 * 2
    assert imported.spec.checkpoint_format == "nf4"
    assert imported.spec.checkpoint_bytes == 156_666_272 + 380_677_888
    # 8-bit bitsandbytes is not modelled.
    raw = {
        **config("qwen2.5-7b"),
        "quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True},
    }
    with pytest.raises(SizingError) as info:
        import_config(raw, "qwen-8bit")
    assert info.value.field == "config_json.quantization_config.load_in_8bit"


def test_deepseek_v2_lite_counts_mla_without_q_lora() -> None:
    # DeepSeek-V2-Lite: hidden 2,048, 27 layers (1 dense, 26 MoE), 16 heads, no q LoRA.
    # Attention a layer: q_proj 2,048 x 16 x (128 + 64) = 6,291,456; kv_a_proj_with_mqa
    # 2,048 x (512 + 64) = 1,179,648; kv_a_layernorm 512; kv_b_proj 512 x 16 x (128 + 128)
    # = 2,097,152; o_proj 16 x 128 x 2,048 = 4,194,304: 13,763,072, x 27 = 371,602,944.
    # Norms 2 x 2,048 x 27 = 110,592. Dense MLP 3 x 2,048 x 10,944 = 67,239,936. An MoE layer:
    # 64 routed + 2 shared experts of 3 x 2,048 x 1,408 and a 64 x 2,048 router = 571,080,704,
    # x 26 = 14,848,098,304. Embedding + untied head 2 x 102,400 x 2,048 = 419,430,400; final
    # norm 2,048. Total 15,706,484,224; the MLA cache is one 512 + 64 latent a token a layer.
    spec = import_config(log_config("deepseek-v2-lite"), "deepseek-v2-lite").spec
    assert spec.total_params == 15_706_484_224
    assert (spec.kv_lora_rank, spec.qk_rope_head_dim) == (512, 64)
    assert spec.count_layers("mla") == 27


def test_gemma_1_ties_embeddings_and_keeps_its_head_dim() -> None:
    # Gemma 7B: hidden 3,072, 16 heads of 256 (4,096 wide), 28 layers, FFN 24,576, vocab
    # 256,000, tied. A layer: 4 x 3,072 x 4,096 = 50,331,648 attention + 3 x 3,072 x 24,576
    # = 226,492,416 MLP + 2 x 3,072 norms = 276,830,208; x 28 = 7,751,245,824; + 786,432,000
    # embedding + 3,072 final norm = 8,537,680,896.
    spec = import_config(log_config("gemma-7b"), "gemma-7b").spec
    assert spec.total_params == 8_537_680_896
    assert spec.resolved_head_dim == 256 and spec.count_layers("full") == 28


def test_rotary_caches_follow_the_rope_each_config_names() -> None:
    # vLLM builds one cos/sin cache per distinct rope: llama3 scaling keeps max_position
    # (131,072); YaRN builds original x factor (gpt-oss: 4,096 x 32 = 131,072; DeepSeek-V3:
    # 4,096 x 40 = 163,840); Gemma 3's local rope has max_position rows and its global one,
    # linear x 8, 1,048,576 rows.
    def rows(name: str, loader: Any = config) -> tuple[int, ...]:
        return tuple(import_config(loader(name), name).spec.rope_cache_rows)

    assert rows("llama-3.1-8b") == (131_072,)
    assert rows("gpt-oss-120b") == (131_072,)
    assert rows("deepseek-v3") == (163_840,)
    assert rows("gemma-3-4b-it", log_config) == (131_072, 1_048_576)


def test_qwen3_next_counts_the_published_totals() -> None:
    # Qwen3-Next-80B-A3B (service/accuracy/cases/vllm_logs/configs/, with its sources), counted
    # from vLLM's qwen3_next.py layer by layer:
    #   embedding + untied head: 2 x 151,936 x 2,048 = 622,329,856
    #   12 gated full-attention layers: q_proj (queries and their gate) 2,048 x 8,192, k and v
    #     2,048 x 512 each, o 4,096 x 2,048, q/k norms 2 x 256: 27,263,488 each = 327,161,856
    #   36 Gated DeltaNet layers: in_proj_qkvz 2,048 x 12,288, in_proj_ba 2,048 x 64, conv1d
    #     8,192 x 4, A_log and dt_bias 2 x 32, gated norm 128, out_proj 4,096 x 2,048:
    #     33,718,464 each = 1,213,864,704
    #   48 MoE blocks: router 2,048 x 512, 512 experts x 3 x 2,048 x 512, a shared expert
    #     3 x 2,048 x 512 and its gate 2,048: 1,614,809,088 each = 77,510,836,224
    #   norms: 97 x 2,048 = 198,656
    # = 79,674,391,296, the published total of the architecture; active = total - 48 x 512
    # routed experts + 48 x 10 of them = 3,874,929,408 (the published active count).
    path = LOG_CONFIGS / "qwen3-next-80b-a3b-instruct.json"
    imported = import_config(json.loads(path.read_text()), "qwen3-next-80b-a3b")
    assert imported.params.total == 79_674_391_296
    assert imported.params.active == 3_874_929_408
    assert imported.params.attention == 327_161_856 + 1_213_864_704
    spec = imported.spec
    assert spec.layer_types == ("linear", "linear", "linear", "full") * 12
    assert (spec.linear_key_heads, spec.linear_value_heads) == (16, 32)
    assert (spec.linear_key_head_dim, spec.linear_value_head_dim, spec.linear_conv_kernel) == (
        128,
        128,
        4,
    )
    assert spec.rotary_dim == 64  # partial_rotary_factor 0.25 of 256


def test_qwen3_next_linear_sizes_are_required() -> None:
    path = LOG_CONFIGS / "qwen3-next-80b-a3b-instruct.json"
    raw = json.loads(path.read_text())
    del raw["linear_num_value_heads"]
    with pytest.raises(SizingError) as err:
        import_config(raw, "broken")
    assert err.value.field == "config_json.linear_num_value_heads"


def test_deepseek_v3_keeps_its_query_lora_and_dense_layers() -> None:
    # config.json: q_lora_rank 1536, first_k_dense_replace 3, intermediate_size 18432 (the dense
    # FFN; experts are moe_intermediate_size 2048): what the vLLM method needs to lay weights
    # out per rank and per pipeline stage.
    spec = import_config(config("deepseek-v3"), "deepseek-v3").spec
    assert (spec.q_lora_rank, spec.dense_layers, spec.dense_intermediate_size) == (1536, 3, 18_432)
    assert spec.intermediate_size == 2048


def test_phi_4_counts_as_llama_shapes_with_fused_projections() -> None:
    # microsoft/phi-4 (Phi3ForCausalLM): embedding and untied head 100,352 x 5,120 =
    # 513,802,240 each; a layer: q and o 5,120 x 5,120 = 26,214,400 each, k and v 5,120 x
    # (10 x 128) = 6,553,600 each, MLP 3 x 5,120 x 17,920 = 275,251,200, two norms 10,240:
    # 340,797,440; x 40 = 13,631,897,600; + final norm 5,120: 14,659,507,200.
    phi4 = {
        "model_type": "phi3",
        "hidden_size": 5120,
        "intermediate_size": 17920,
        "num_attention_heads": 40,
        "num_hidden_layers": 40,
        "num_key_value_heads": 10,
        "max_position_embeddings": 16384,
        "vocab_size": 100352,
        "rope_scaling": None,
        "sliding_window": None,
        "tie_word_embeddings": False,
    }
    assert import_config(phi4, "phi-4").spec.total_params == 14_659_507_200
    with pytest.raises(SizingError) as err:
        import_config({**phi4, "rope_scaling": {"type": "longrope"}}, "phi-3.5")
    assert err.value.field.endswith("rope_scaling")
    # A partial rotary factor other than 1.0, or not a number at all ("x" and null made float()
    # raise: a 500 before), is refused by name; 1 (an int) is the whole head.
    for factor in (0.5, "x", None, [1.0]):
        with pytest.raises(SizingError) as err:
            import_config({**phi4, "partial_rotary_factor": factor}, "phi-x")
        assert err.value.field == "config_json.partial_rotary_factor"
    assert import_config({**phi4, "partial_rotary_factor": 1}, "phi-4").spec.total_params == (
        14_659_507_200
    )


def test_qwen2_5_vl_counts_its_vision_transformer_and_merger() -> None:
    # Qwen2.5-VL-7B-Instruct's vision_config: hidden 1,280, intermediate 3,420, depth 32,
    # 3 channels, temporal patch 2, patch 14, spatial merge 2, out_hidden_size 3,584 (vLLM
    # 0.8.2 qwen2_5_vl.py, Qwen2_5_VisionTransformer):
    # patch_embed Conv3d, no bias: 3 x 2 x 14 x 14 x 1,280 = 1,505,280.
    # One block: norm1 + norm2 (RMSNorm) 2 x 1,280 = 2,560; qkv 1,280 x 3,840 + 3,840
    # = 4,919,040; proj 1,280 x 1,280 + 1,280 = 1,639,680; gate and up 2 x (1,280 x 3,420
    # + 3,420) = 8,762,040; down 3,420 x 1,280 + 1,280 = 4,378,880; together 19,702,200, and
    # 32 blocks 630,470,400.
    # Merger: ln_q 1,280; mlp.0 5,120 x 5,120 + 5,120 = 26,219,520 (5,120 = 1,280 x 2^2);
    # mlp.2 5,120 x 3,584 + 3,584 = 18,353,664; together 44,574,464.
    # Vision: 1,505,280 + 630,470,400 + 44,574,464 = 676,550,144.
    # Whole on every TP rank: the Conv3d 1,505,280, per block the two norms and the
    # row-parallel biases of proj and down_proj (2,560 + 1,280 + 1,280 = 5,120, x 32 =
    # 163,840), the merger's ln_q 1,280 and mlp.2 bias 3,584: 1,673,984.
    # The decoder is Qwen2-7B's: 7,615,616,512 (28 layers of hidden 3,584, 4 KV heads of 128,
    # MLP 18,944, untied 152,064 vocabulary). Total 8,292,166,656: the "8.29B parameters"
    # transformers 4.57.1 printed for this checkpoint (the verl log the config was copied from,
    # see its _source); 2 bytes each, 16,584,333,312 B, is the BF16 size third-party code
    # records for Qwen2.5-VL-7B derivatives (index total_size asserted for a Lingshu-7B
    # checkpoint, and exo's Qwen-Image card, whose text encoder is Qwen2.5-VL-7B).
    imported = import_config(log_config("qwen2.5-vl-7b-instruct"), "qwen2.5-vl-7b")
    assert imported.model_type == "qwen2_5_vl"
    assert imported.vision_params == 676_550_144
    assert imported.spec.replicated_params == 1_673_984
    assert imported.params.total == 7_615_616_512
    assert imported.spec.total_params == 8_292_166_656
    assert imported.checkpoint.total_bytes == 16_584_333_312
    assert imported.spec.architecture == "Qwen2_5_VLForConditionalGeneration"
    # The decoder: Qwen2 shapes, every layer full attention (use_sliding_window false).
    spec = imported.spec
    assert (spec.layers, spec.hidden_size, spec.kv_heads, spec.head_dim) == (28, 3584, 4, 128)
    assert spec.count_layers("full") == 28 and spec.sliding_window_tokens == 0
    # Multimodal RoPE (rope_scaling names mrope_section): vLLM's MRotaryEmbedding caches
    # 4 x 128,000 = 512,000 rows (of 128 x 2 B: 131,072,000 B, not 32,768,000).
    assert spec.rope_cache_rows == (512_000,)


def test_qwen2_5_vl_reads_the_decoder_from_the_top_level_of_older_configs() -> None:
    # transformers < 4.52 wrote no text_config: the same decoder from the top-level fields.
    raw = log_config("qwen2.5-vl-7b-instruct")
    del raw["text_config"]
    assert import_config(raw, "qwen2.5-vl-7b").spec.total_params == 8_292_166_656
    # A merger that does not feed the decoder's width is refused, naming the field.
    raw["vision_config"] = {**raw["vision_config"], "out_hidden_size": 2048}
    with pytest.raises(SizingError, match="out_hidden_size"):
        import_config(raw, "qwen2.5-vl-7b")


@pytest.mark.parametrize("name", [name for name, *_ in REFERENCE])
def test_a_specs_linear_matrices_are_the_configs_without_shared_experts(name: str) -> None:
    # QLoRA quantises the decoder's nn.Linear matrices only (qlora_base_bytes), counted from the
    # catalogue's ModelSpec; the importer lists the same matrices from the config's own layer
    # shapes (linear_weights, checked against meta-device counts). A spec has no shared-expert
    # count, so those stay 16-bit (none of these models but DeepSeek-V3 has one).
    raw = config(name)
    model_type = raw["model_type"]
    layout = FAMILIES[model_type](Config(raw["text_config"] if model_type == "gemma3" else raw))
    matrices = sum(w.params for w in linear_weights(layout[0]) if w.kind != "shared_expert")
    assert decoder_linear_params(import_config(raw, name).spec) == matrices


def test_glm_4_5_air_counts_its_dense_layer_shared_expert_and_biases() -> None:
    # By hand from its config.json (hidden 4096, 46 layers, 96 query heads and 8 KV heads of
    # 128, first_k_dense_replace 1 of FFN 10944, 128 routed experts of 1408 plus 1 shared,
    # vocab 151552, untied): embedding = head = 151552 x 4096 = 620,756,992; attention per
    # layer = q 4096 x 12288 + k, v 2 x 4096 x 1024 + o 12288 x 4096 + q/k/v biases
    # (12288 + 2 x 1024) = 50,331,648 + 8,388,608 + 50,331,648 + 14,336 = 109,066,240, x 46 =
    # 5,017,047,040; the dense layer 3 x 4096 x 10944 = 134,479,872; one expert 3 x 4096 x
    # 1408 = 17,301,504: routed 45 x 128 x 17,301,504 = 99,656,663,040, shared 45 x
    # 17,301,504 = 778,567,680; routers 45 x 4096 x 128 = 23,592,960; norms 46 x 2 x 4096 +
    # 4096 = 380,928. Total 106,852,245,504 (published: 106B). Active, excluding the input
    # embedding: total - 620,756,992 - 99,656,663,040 x (1 - 8/128) = 12,803,366,912.
    imported = import_config(config("glm-4.5-air"), "glm-4.5-air")
    spec = imported.spec
    assert spec.total_params == 106_852_245_504
    assert spec.active_params == 12_803_366_912
    assert (spec.dense_layers, spec.dense_intermediate_size) == (1, 10944)
    assert (spec.experts, spec.experts_per_token, spec.intermediate_size) == (128, 8, 1408)
    assert spec.rotary_dim == 64  # partial_rotary_factor 0.5 of head_dim 128
    assert imported.params.shared_experts == 778_567_680


def test_glm_4_6_has_query_key_norms_and_three_dense_layers() -> None:
    # Attention per layer at hidden 5120 (96 query heads, 8 KV heads of 128): q and o 2 x 5120
    # x 12288 = 125,829,120, k and v 2 x 5120 x 1024 = 10,485,760, q/k/v biases 12288 + 2 x
    # 1024 = 14,336, and use_qk_norm's two RMSNorms of head_dim 2 x 128 = 256: 136,329,472,
    # x 92 layers = 12,542,311,424.
    imported = import_config(config("glm-4.6"), "glm-4.6")
    assert imported.params.attention == 12_542_311_424
    assert (imported.spec.dense_layers, imported.spec.experts) == (3, 160)
