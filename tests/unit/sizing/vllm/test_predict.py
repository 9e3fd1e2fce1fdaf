"""The vLLM method: page and block arithmetic, weights as loaded, the budget and the log lines.

Numbers are worked by hand from vLLM's rules (docs/reference/models.md) and the fitted
constants documented in service/sizing/vllm/calibration.py.
"""

import msgspec
import pytest

from service.sizing.errors import SizingError
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.models import ModelSpec
from service.sizing.vllm.activation import v0_forward_peak_bytes
from service.sizing.vllm.budget import custom_all_reduce, pipeline_partition
from service.sizing.vllm.config import EngineConfig, for_release, kv_cache_dtype_of, quantization_of
from service.sizing.vllm.int4 import w4a16_expert_bytes
from service.sizing.vllm.kv_cache import hybrid_block_size, kv_groups
from service.sizing.vllm.mla import mla_extra_bytes
from service.sizing.vllm.mxfp4 import mxfp4_backend_for, mxfp4_expert_bytes
from service.sizing.vllm.predict import EnginePrediction, predict_vllm
from service.sizing.vllm.releases import era_of_version, last_of
from service.sizing.vllm.weights import (
    loaded_weight_bytes,
    offloaded_layer_bytes,
    rank_weight_bytes,
    rope_cache_bytes,
)
from tests.unit.sizing.specs import (
    DEEPSEEK_V3,
    GPT_OSS_120B,
    H200,
    LLAMA_8B,
    LLAMA_70B,
    QWEN3_NEXT_80B,
    QWEN25_7B,
)

GIB = 2**30
H100 = GpuSpec(
    slug="h100-sxm",
    vendor="NVIDIA",
    compute_capability=(9, 0),
    memory_bytes=80_000_000_000,
    driver_visible_bytes=85_520_809_984,
    hbm_bytes_per_s=3_350_000_000_000,
)


def test_hybrid_groups_follow_vllm() -> None:
    # gpt-oss: 18 sliding + 18 full -> groups of 18, one of each type.
    assert msgspec.structs.astuple(kv_groups(("sliding", "full") * 18)) == (18, 1, 1, 0)
    # Gemma 3: 52 sliding + 10 full; 52 >= 1.5 x 10, so groups of 10: 1 full + ceil(52/10) = 6.
    g = kv_groups(("sliding",) * 52 + ("full",) * 10)
    assert msgspec.structs.astuple(g) == (10, 1, 6, 0)
    # One attention type: one group of every layer.
    assert msgspec.structs.astuple(kv_groups(("full",) * 32)) == (32, 1, 0, 0)
    # Qwen3-Next: 36 linear + 12 full; 36 >= 1.5 x 12, groups of 12: 1 full + 3 linear.
    g = kv_groups(("linear", "linear", "linear", "full") * 12)
    assert msgspec.structs.astuple(g) == (12, 1, 0, 3)


def test_weights_as_loaded() -> None:
    # 16-bit: 8,030,261,248 x 2 B; TP 2 halves it.
    assert loaded_weight_bytes(LLAMA_8B, "none", 1) == 16_060_522_496
    assert loaded_weight_bytes(LLAMA_8B, "none", 2) == 8_030_261_248
    # Replicated parameters (a vision tower's Conv3d, norms, row-parallel biases) are whole on
    # each rank: 1,673,984 of them in a 8,292,166,656 total at TP 4 (Qwen2.5-VL-7B):
    # (8,292,166,656 - 1,673,984) x 2 / 4 + 1,673,984 x 2 = 4,145,246,336 + 3,347,968
    # = 4,148,594,304 B, against 4,146,083,328 if everything were sliced.
    vl = msgspec.structs.replace(LLAMA_8B, total_params=8_292_166_656, replicated_params=1_673_984)
    assert loaded_weight_bytes(vl, "none", 4) == 4_148_594_304
    # FP8 70B: embedding and LM head (128,256 x 8,192 = 1,050,673,152 each) stay 16-bit:
    # (70,553,706,496 - 2,101,346,304) x 1 + 2,101,346,304 x 2 = 72,655,052,800 B (67.66 GiB;
    # the llm-d log says 67.72).
    assert loaded_weight_bytes(LLAMA_70B, "fp8", 1) == 72_655_052_800


# gpt-oss-120b outside the experts, kept 16-bit: 116,829,156,672 params less the logical experts
# 36 x 128 x (3 x 2,880 x 2,880 + 2 x 2,880 + 2,880) = 114,701,598,720 -> 2,127,557,952 params,
# 4,255,115,904 B at TP 1 and 1,063,778,976 B at TP 4.


def test_mxfp4_marlin_layout_pads_per_rank() -> None:
    # Marlin at TP 4 (vLLM mxfp4.py): I = 2,880 / 4 = 720 -> round_up(720, 128) = 768;
    # H = round_up(2,880, 256) = 3,072. Per expert: w13 2 x 768 x 3,072 / 2 = 2,359,296;
    # its scales 1,536 x 96 = 147,456; w2 3,072 x 384 = 1,179,648; its scales 3,072 x 24 =
    # 73,728; bf16 biases (1,536 + 3,072) x 2 = 9,216 -> 3,769,344 B. x 128 x 36 =
    # 17,369,137,152; + 1,063,778,976 = 18,432,916,128 B = 17.167 GiB (the A100 log: 17.2217).
    assert loaded_weight_bytes(GPT_OSS_120B, "mxfp4", 4, "marlin") == 18_432_916_128
    # Marlin at TP 1: I = round_up(2,880, 128) = 2,944, H = 3,072. Per expert:
    # 2,944 x 3,072 = 9,043,968 + 5,888 x 96 = 565,248 + 3,072 x 1,472 = 4,521,984
    # + 3,072 x 92 = 282,624 + (5,888 + 3,072) x 2 = 17,920 -> 14,431,744 B; x 4,608 experts
    # = 66,501,476,352; + 4,255,115,904 = 70,756,592,256 B = 65.897 GiB (issue #23278: 65.9651).
    assert loaded_weight_bytes(GPT_OSS_120B, "mxfp4", 1, "marlin") == 70_756_592_256


def test_mxfp4_triton_layout_keeps_both_scale_copies() -> None:
    # triton_kernels on Hopper: I = round_up(2,880, 64) = 2,880, H unpadded. Per expert:
    # w13 5,760 x 1,440 = 8,294,400; its scales 5,760 x 90 = 518,400; w2 2,880 x 1,440 =
    # 4,147,200; its scales 2,880 x 90 = 259,200; fp32 biases 8,640 x 4 = 34,560; swizzled
    # scales padded to 256 rows: 5,888 x 90 = 529,920 and 3,072 x 90 = 276,480
    # -> 14,060,160 B; x 4,608 = 64,789,217,280; + 4,255,115,904 = 69,044,333,184 B
    # = 64.30 GiB (two H100 logs: 64.38).
    assert loaded_weight_bytes(GPT_OSS_120B, "mxfp4", 1, "triton") == 69_044_333_184


def test_mxfp4_triton_from_0_17_pads_the_packed_weights_to_64() -> None:
    # The bundled triton_kernels' HopperMXValueLayout pads both dims of the packed weights to
    # 64: w13 [H/2 = 1,440 -> 1,472, 2I = 5,760] adds 32 x 5,760 = 184,320 B; w2 [I/2 = 1,440
    # -> 1,472, H = 2,880] adds 32 x 2,880 = 92,160 B. 14,060,160 + 276,480 = 14,336,640 B an
    # expert; x 4,608 = 66,063,237,120; + 4,255,115,904 = 70,318,353,024 B.
    assert loaded_weight_bytes(GPT_OSS_120B, "mxfp4", 1, "triton-padded") == 70_318_353_024
    assert mxfp4_backend_for(H100, last_of("v1-0.19")) == mxfp4_backend_for(
        H100, last_of("v1-cudagraph")
    )
    assert mxfp4_backend_for(H100, last_of("v1-0.19")) == "triton-padded"


def test_mxfp4_backend_follows_gpu_and_version() -> None:
    a100 = GpuSpec(
        slug="a100-80gb",
        name="NVIDIA A100 80GB",
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=2 * 10**12,
    )
    assert mxfp4_backend_for(a100, last_of("v1-0.11")) == "marlin"
    assert mxfp4_backend_for(H100, last_of("v1-0.10")) == "marlin"  # 0.10.1 wheels: torch 2.7.1
    assert mxfp4_backend_for(H100, last_of("v1-0.11")) == "triton"
    # FlashInfer's TRT-LLM layout is CUDA's: an FP4-capable AMD GPU (MI355X) is sized as
    # MI300X is (Marlin's layout), an FP4-capable NVIDIA one (B200) takes it.
    mi355x = GpuSpec(
        slug="mi355x", vendor="AMD", fp4=True, memory_bytes=288 * 10**9, hbm_bytes_per_s=8 * 10**12
    )
    b200 = msgspec.structs.replace(mi355x, slug="b200", vendor="NVIDIA")
    mi300x = msgspec.structs.replace(mi355x, slug="mi300x", fp4=False)
    for release in ("v1-0.11", "v1-0.19"):
        assert mxfp4_backend_for(mi355x, last_of(release)) == "marlin"
        assert mxfp4_backend_for(mi300x, last_of(release)) == "marlin"
        assert mxfp4_backend_for(b200, last_of(release)) == "flashinfer-trtllm"
    p = predict_vllm(GPT_OSS_120B, a100, EngineConfig(quantization="mxfp4", tensor_parallel_size=4))
    # The loaded weights plus the rotary cache every rank builds, 131,072 x 64 x 2 B, plus the
    # routers each rank holds whole (vLLM replicates them): 36 x 2,880 x 128 x 2 B, of which a
    # quarter was counted: 36 x (737,280 - 184,320) = 19,906,560.
    assert p.per_gpu.weights_bytes == 18_432_916_128 + 16_777_216 + 19_906_560


def test_llama_8b_on_80_gib_budget_and_lines() -> None:
    # total 80 GiB x 0.9 = 77,309,411,328; weights 16,060,522,496 plus the rotary cache
    # 131,072 x 128 x 2 B = 33,554,432; activation 9.71 x 1,024 seqs x 128,256 vocab x 4 B =
    # 5,101,018,152; non-torch 139,586,437 (TP 1): KV = 55,974,729,811 B. Page = 16 tokens x 2
    # x 8 heads x 128 x 2 B = 65,536 B; a block across 32 layers = 2,097,152 B -> 26,690 blocks
    # = 427,040 tokens; 26,690 / (8,192 / 16) = 52.13x for 8,192-token requests.
    config = EngineConfig(gpu_total_bytes=80 * GIB, max_model_len=8192)
    p = predict_vllm(LLAMA_8B, H100, config)
    assert p.per_gpu.usable_bytes == 77_309_411_328
    assert p.per_gpu.activation_bytes == 5_101_018_152
    assert p.per_gpu.weights_bytes == 16_094_076_928
    assert p.per_gpu.kv_cache_bytes == 55_974_729_811
    assert p.per_gpu.block_bytes == 2_097_152
    assert p.kv_cache_tokens == 427_040
    assert p.max_concurrency == 52.13
    assert "GPU KV cache size: 427,040 tokens" in p.log_lines
    assert "Maximum concurrency for 8,192 tokens per request: 52.13x" in p.log_lines
    assert (p.defaults.max_num_batched_tokens, p.defaults.max_num_seqs) == (8192, 1024)


def test_log_vocabulary_maps_onto_the_engine_config() -> None:
    # Releases map to accounting eras: 0.5-0.7 V0; 0.10.0-0.10.1 the small sampler peak; 0.8,
    # 0.9 and 0.10.2-0.16 the fp32-logits sampler peak (the Qwen3-14B sweep: 5.64 GiB on 0.15
    # and 0.16, 2.23 on 0.17 and 0.18); 0.17-0.20 the v0.19 accounting; 0.21 and 0.22 subtract
    # the CUDA-graph estimate; from 0.23 Model Runner V2 serves dense models. What names no
    # release takes the caller's era.
    assert era_of_version("0.6.5.dev") == "v0"
    assert era_of_version("0.7.x (V0; not printed)") == "v0"
    assert era_of_version("0.9.2") == "v1-0.11"
    assert era_of_version("0.10.1.1") == "v1-0.10"
    assert era_of_version("0.10.2") == "v1-0.11"
    assert era_of_version("0.14.1") == era_of_version("0.16.0") == "v1-0.11"
    assert era_of_version("0.17.0") == "v1-0.19"
    assert era_of_version("0.19.0") == era_of_version("0.20.2") == "v1-0.19"
    assert era_of_version("v0.21.0") == era_of_version("0.22.1") == "v1-cudagraph"
    assert era_of_version("0.23.0") == era_of_version("0.28.0") == "v2-runner"
    # 0.29 on (vLLM PR #53183): every model on Model Runner V2.
    assert era_of_version("0.29.0") == era_of_version("v0.31.0") == "v2-all"
    assert era_of_version("1.0.0") == "v2-all"
    assert era_of_version("0.1.dev7548+gbaba038", "v1-0.19") == "v1-0.19"
    assert era_of_version("unknown", "v1-cudagraph") == "v1-cudagraph"
    with pytest.raises(SizingError) as e:
        era_of_version("0.2.7")
    assert e.value.field == "vllm_version"
    # The MLA latent cache arrived in 0.7.1; "0.7.x" means the minor's last patch.
    assert (
        not for_release(EngineConfig(), "0.6.4").mla_latent_cache
        and not for_release(EngineConfig(), "0.7.0").mla_latent_cache
    )
    assert (
        for_release(EngineConfig(), "0.7.1").mla_latent_cache
        and for_release(EngineConfig(), "0.7.x").mla_latent_cache
    )
    assert for_release(EngineConfig(), "0.1.dev7548+gbaba038").mla_latent_cache
    # compressed-tensors and modelopt checkpoints load FP8 linear layers; unknown methods 16-bit.
    assert quantization_of("compressed-tensors") == quantization_of("modelopt") == "fp8"
    assert quantization_of("MXFP4") == "mxfp4"
    assert quantization_of("bf16") == "none"  # anything else: 16-bit (4-bit methods: below)
    assert kv_cache_dtype_of("fp8_e5m2") == "fp8"
    assert kv_cache_dtype_of("auto") == "auto"


def test_defaults_depend_on_the_gpu() -> None:
    # An A100 (or any GPU under 70 GiB) gets vllm serve's smaller defaults: 2048 tokens, 256 seqs.
    a100 = GpuSpec(
        slug="a100-80gb",
        name="NVIDIA A100 80GB",
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=2 * 10**12,
    )
    p = predict_vllm(LLAMA_8B, a100, EngineConfig(gpu_total_bytes=80 * GIB, max_model_len=8192))
    assert (p.defaults.max_num_batched_tokens, p.defaults.max_num_seqs) == (2048, 256)
    assert "A100" in p.defaults.rule


def test_from_0_28_a_gpu_of_160_gib_gets_the_largest_defaults() -> None:
    # vLLM 0.28.0's get_batch_defaults: >= 160 GiB (torch's total; an MI300X shows 191.98)
    # gives 16,384 batched tokens and 1,024 sequences to vllm serve and the LLM class alike;
    # 0.27 and earlier stop at the >= 70 GiB tier (8,192 for vllm serve, 16,384 for the class).
    mi300x = GpuSpec(
        slug="mi300x", vendor="AMD", memory_bytes=192 * 10**9, hbm_bytes_per_s=5 * 10**12
    )
    base = EngineConfig(gpu_total_bytes=round(191.98 * GIB), max_model_len=8192)

    def defaults(**flags: object) -> tuple[int, int]:
        d = predict_vllm(LLAMA_8B, mi300x, msgspec.structs.replace(base, **flags)).defaults
        return (d.max_num_batched_tokens, d.max_num_seqs)

    assert defaults(era="v2-all") == (16384, 1024)
    assert defaults(era="v2-runner", release=(0, 28, 0)) == (16384, 1024)
    assert defaults(era="v2-runner", release=(0, 27, 1)) == (8192, 1024)
    assert defaults(era="v2-runner", release=(0, 27, 1), usage="llm_class") == (16384, 1024)
    assert defaults(era="v1-0.19") == (8192, 1024)
    # An H200 (139.8 GiB) stays in the >= 70 GiB tier on every release.
    h200 = msgspec.structs.replace(base, gpu_total_bytes=round(139.81 * GIB), era="v2-all")
    assert predict_vllm(LLAMA_8B, mi300x, h200).defaults.max_num_batched_tokens == 8192


def test_weights_that_do_not_leave_room_fail() -> None:
    # 70B in 16-bit on one 80 GiB GPU: 141 GB of weights > 72 GiB usable: no KV at all.
    p = predict_vllm(LLAMA_70B, H100, EngineConfig(max_model_len=8192))
    assert not p.starts and p.kv_cache_tokens == 0
    assert p.failure is not None and "No available memory" in p.failure


def test_bad_flags_name_the_field() -> None:
    with pytest.raises(SizingError) as e:
        predict_vllm(LLAMA_8B, H100, EngineConfig(tensor_parallel_size=3))
    assert e.value.field == "tensor_parallel_size"
    with pytest.raises(SizingError) as e:
        predict_vllm(LLAMA_8B, H100, EngineConfig(block_size=7))
    assert e.value.field == "block_size"


def test_mla_page_is_one_latent_replicated() -> None:
    # DeepSeek-style MLA: 576 values x 2 B per token per layer, whole on every TP rank.
    mla = ModelSpec(
        slug="mla-toy",
        total_params=1_000_000_000,
        layers=4,
        hidden_size=1024,
        attention_heads=16,
        kv_heads=16,
        vocab_size=1000,
        max_context_tokens=4096,
        kv_lora_rank=512,
        qk_rope_head_dim=64,
    )
    p1 = predict_vllm(mla, H100, EngineConfig(max_model_len=4096))
    p8 = predict_vllm(mla, H100, EngineConfig(max_model_len=4096, tensor_parallel_size=8))
    # page = 16 x 576 x 2 = 18,432 B; block = 4 layers x 18,432 = 73,728 B at any TP.
    assert p1.per_gpu.page_bytes == p8.per_gpu.page_bytes == 18_432
    assert p1.per_gpu.block_bytes == 73_728


def test_v019_budget_has_the_smaller_sampler_and_no_graph_deduction() -> None:
    # vLLM 0.19 (llm-d-planner logs): activation = 3.9 x 1024 seqs x 128,256 vocab x 4 B
    # = 2,048,812,646; non-torch at TP 1 = 0.24 GiB = 257,698,038; graphs not subtracted.
    # Total 85,520,809,984 - 494,000,000 = 85,026,809,984; x 0.95 = 80,775,469,484 usable.
    # Weights 16,060,522,496 + the 33,554,432 B rotary cache = 16,094,076,928.
    # KV = 80,775,469,484 - 16,094,076,928 - 2,048,812,646 - 257,698,038 = 62,374,881,872
    # -> 29,742 blocks of 2,097,152 B (32 layers x 16 x 4,096 B) -> 475,872 tokens.
    config = EngineConfig(max_model_len=8192, gpu_memory_utilization=0.95, era="v1-0.19")
    p = predict_vllm(LLAMA_8B, H100, config)
    assert p.per_gpu.activation_bytes == 2_048_812_646
    assert p.per_gpu.non_torch_bytes == 257_698_038
    assert p.per_gpu.cuda_graph_bytes == 0
    assert p.per_gpu.kv_cache_bytes == 62_374_881_872
    assert (p.per_gpu.num_blocks, p.kv_cache_tokens) == (29_742, 475_872)


def test_cudagraph_era_subtracts_the_graph_estimate_and_all_reduce_buffers() -> None:
    # 0.21+: the same budget less the 1.33 GiB graph estimate (1,428,076,216 B):
    # 62,374,881,872 - 1,428,076,216 = 60,946,805,656 -> 29,061 blocks -> 464,976 tokens
    # (concurrency x max_model_len = 29,061 / 512 x 8,192, the same for one layer group).
    base = EngineConfig(max_model_len=8192, gpu_memory_utilization=0.95, era="v1-cudagraph")
    p = predict_vllm(LLAMA_8B, H100, base)
    assert p.per_gpu.cuda_graph_bytes == 1_428_076_216
    assert p.per_gpu.kv_cache_bytes == 60_946_805_656
    assert (p.per_gpu.num_blocks, p.kv_cache_tokens) == (29_061, 464_976)
    # TP 2 over NVLink: custom all-reduce buffers make non-torch 2.1 GiB = 2,254,857,830;
    # weights 8,030,261,248 a rank + the 33,554,432 B rotary cache (whole on every rank):
    # 80,775,469,484 - 8,063,815,680 - 2,048,812,646 - 2,254,857,830 - 1,428,076,216
    # = 66,979,907,112 -> 63,877 blocks of 1,048,576 B.
    p2 = predict_vllm(LLAMA_8B, H100, msgspec.structs.replace(base, tensor_parallel_size=2))
    assert p2.per_gpu.non_torch_bytes == 2_254_857_830
    assert p2.per_gpu.kv_cache_bytes == 66_979_907_112
    assert p2.per_gpu.num_blocks == 63_877
    # Eager mode captures no graphs, so nothing is subtracted.
    eager = predict_vllm(LLAMA_8B, H100, msgspec.structs.replace(base, enforce_eager=True))
    assert eager.per_gpu.cuda_graph_bytes == 0


def test_custom_all_reduce_needs_nvlink_or_two_p2p_gpus() -> None:
    # vLLM's CustomAllreduce: fully connected GPUs (NVLink), or two PCIe GPUs with P2P;
    # GeForce cards have no P2P; more than two PCIe-only GPUs are refused.
    pcie = GpuSpec(slug="l40s", memory_bytes=48 * 10**9, hbm_bytes_per_s=864 * 10**9)
    geforce = GpuSpec(
        slug="rtx-4090", memory_bytes=24 * 10**9, hbm_bytes_per_s=10**12, peer_to_peer=False
    )
    nvlinked = msgspec.structs.replace(
        H100, nvlink=LinkSpec(slug="nvlink-4", kind="nvlink", bytes_per_s_per_direction=450e9)
    )
    assert not custom_all_reduce(nvlinked, 1)
    assert custom_all_reduce(nvlinked, 8)
    assert custom_all_reduce(pcie, 2) and not custom_all_reduce(pcie, 4)
    assert not custom_all_reduce(geforce, 2)


def test_pipeline_stages_hold_their_own_weights_and_the_last_samples() -> None:
    # Llama 3.1 8B, PP 2 on an 80 GiB GPU (usable 0.9 x 80 GiB = 77,309,411,328), v1-0.11.
    # Embedding = LM head = 128,256 x 4,096 x 2 B = 1,050,673,152; the 32 layers' body is
    # 16,060,522,496 - 2 x 1,050,673,152 = 13,959,176,192, 16 layers a stage: each stage holds
    # 6,979,588,096 + 1,050,673,152 = 8,030,261,248, and each builds the 33,554,432 B rotary
    # cache: 8,063,815,680. Only the last stage runs the sampler (5,101,018,152), so it
    # limits: 77,309,411,328 - 8,063,815,680 - 5,101,018,152 - 139,586,437 = 64,004,991,059
    # -> 61,039 blocks of 16 layers x 16 x 4,096 B = 1,048,576 -> 976,624 tokens.
    config = EngineConfig(
        max_model_len=8192, pipeline_parallel_size=2, gpu_total_bytes=80 * GIB, era="v1-0.11"
    )
    p = predict_vllm(LLAMA_8B, H100, config)
    assert p.per_gpu.weights_bytes == 8_063_815_680
    assert p.per_gpu.activation_bytes == 5_101_018_152
    assert p.per_gpu.kv_cache_bytes == 64_004_991_059
    assert (p.per_gpu.block_bytes, p.per_gpu.num_blocks) == (1_048_576, 61_039)
    assert p.kv_cache_tokens == 976_624


def test_graphs_captured_after_the_cache_need_room_outside_the_budget() -> None:
    # Before 0.21 graphs are captured after the KV cache takes utilisation x total: at 1.0
    # nothing is left (vLLM issue #13074's CUDA OOM); eager mode captures none.
    full = EngineConfig(max_model_len=8192, gpu_memory_utilization=1.0, era="v1-0.11")
    p = predict_vllm(LLAMA_8B, H100, full)
    assert not p.starts and p.failure is not None and "capturing CUDA graphs" in p.failure
    eager = predict_vllm(LLAMA_8B, H100, msgspec.structs.replace(full, enforce_eager=True))
    assert eager.starts
    # 0.21+ reserve the estimate inside the budget, but from 0.17 the engine first checks that
    # utilisation x total is free at start-up: the CUDA context holds 0.51 GiB at TP 1, so 0.99
    # (79.19 x 0.99 = 78.40 < 79.19 - 0.51 = 78.68) starts and 1.0 does not.
    later = msgspec.structs.replace(full, era="v1-cudagraph")
    refused = predict_vllm(LLAMA_8B, H100, later)
    assert not refused.starts and refused.failure is not None
    assert "Free memory on device" in refused.failure
    almost = msgspec.structs.replace(later, gpu_memory_utilization=0.99)
    assert predict_vllm(LLAMA_8B, H100, almost).starts


def test_hybrid_tokens_line_is_concurrency_times_length_from_0_21() -> None:
    # A Gemma-like toy: 5 sliding layers (window 1,024) and 1 full, one 256-wide KV head:
    # 1,024 B per token per layer. Groups of 1 layer (5 >= 1.5 x 1), 6 groups. A request of
    # 8,192 tokens takes 512 blocks on the full layer and ceil((1,023 + 2,048) / 16) + 1 = 193
    # on each sliding one: 512 + 5 x 193 = 1,477 blocks. Up to 0.20 the tokens line is
    # blocks // 6 x 16; from 0.21 it is int(blocks / 1,477 x 8,192).
    toy = ModelSpec(
        slug="hybrid-toy",
        total_params=1_000_000_000,
        layers=6,
        hidden_size=1024,
        attention_heads=4,
        kv_heads=1,
        head_dim=256,
        vocab_size=1000,
        max_context_tokens=8192,
        sliding_window_tokens=1024,
        layer_types=("sliding",) * 5 + ("full",),
    )
    base = EngineConfig(
        max_model_len=8192, max_num_batched_tokens=2048, enforce_eager=True, era="v1-0.19"
    )
    old = predict_vllm(toy, H100, base)
    new = predict_vllm(toy, H100, msgspec.structs.replace(base, era="v1-cudagraph"))
    blocks = old.per_gpu.num_blocks
    assert new.per_gpu.num_blocks == blocks and new.blocks_per_request == 1_477
    assert old.kv_cache_tokens == blocks // 6 * 16
    assert new.kv_cache_tokens == int(blocks / 1_477 * 8192)


def test_mla_cache_layouts_by_release() -> None:
    # DeepSeek-V3 shapes (61 MLA layers, 128 heads, latent 512 + 64) at TP 8, 16-bit:
    # the latent is 576 x 2 = 1,152 B a token a layer; V0 aligns it to 1,280 B (256-byte
    # entries); before 0.7.1 the cache held K and V of 256 values for 128 / 8 = 16 heads:
    # 2 x 16 x 256 x 2 = 16,384 B. A block of 16 tokens x 61 layers.
    mla = EngineConfig(tensor_parallel_size=8, max_model_len=4096, era="v1-0.11")
    v0 = msgspec.structs.replace(mla, era="v0")
    pre = msgspec.structs.replace(v0, mla_latent_cache=False)
    expected = {mla: 1_152, v0: 1_280, pre: 16_384}
    for config, per_token in expected.items():
        p = predict_vllm(DEEPSEEK_V3, H100, config)
        assert p.per_gpu.block_bytes == 16 * 61 * per_token


def test_rotary_caches_count_as_loaded_weights() -> None:
    # "Model loading took" counts the cos/sin buffers: rows x rotary dim x 2 B on every rank.
    # Llama 3.1 8B: 131,072 x 128 x 2 = 33,554,432 B. Gemma 3 4B's two ropes:
    # (131,072 + 1,048,576) x 256 x 2 = 603,979,776 B = 0.5625 GiB. MLA rotates only the
    # 64-wide rope part: DeepSeek-V3 163,840 x 64 x 2 = 20,971,520 B (its spec names no rows:
    # max_context_tokens, 163,840).
    assert rope_cache_bytes(LLAMA_8B) == 33_554_432
    gemma = msgspec.structs.replace(LLAMA_8B, head_dim=256, rope_cache_rows=(131_072, 1_048_576))
    assert rope_cache_bytes(gemma) == 603_979_776
    assert rope_cache_bytes(DEEPSEEK_V3) == 20_971_520
    assert rope_cache_bytes(LLAMA_8B, 4) == 67_108_864  # --dtype float32


def test_model_runner_v2_serves_dense_models_without_a_graph_term() -> None:
    # From 0.23 a dense full-attention model runs on Model Runner V2: no CUDA-graph estimate in
    # the budget and a first-start peak of 343,409 B per hidden unit (4,096 x 343,409 =
    # 1,406,603,264 B for Llama 3.1 8B). On the catalogue-like H100 at 0.9: 76,524,128,985
    # usable - 16,094,076,928 weights - 1,406,603,264 - 257,698,038 non-torch = 58,765,750,755
    # B = 28,021 blocks = 448,336 tokens. A warm compile cache leaves the forward pass: the
    # MLP over 8,192 batched tokens, 8,192 x (3 x 14,336 + 2 x 4,096) x 2 B = 838,860,800 B,
    # above the sampler's 16-bit logits, 1,024 x 128,256 x 2 = 262,668,288 B, which set the
    # peak when the batch is small (256 tokens: 26,214,400 B of MLP).
    config = EngineConfig(max_model_len=8192, era="v2-runner")
    p = predict_vllm(LLAMA_8B, H100, config)
    assert p.per_gpu.cuda_graph_bytes == 0
    assert p.per_gpu.activation_bytes == 1_406_603_264
    assert p.per_gpu.kv_cache_bytes == 58_765_750_755
    assert (p.per_gpu.num_blocks, p.kv_cache_tokens) == (28_021, 448_336)
    warm = predict_vllm(LLAMA_8B, H100, msgspec.structs.replace(config, compile_cache="warm"))
    assert warm.per_gpu.activation_bytes == 838_860_800
    small = msgspec.structs.replace(config, compile_cache="warm", max_num_batched_tokens=256)
    assert predict_vllm(LLAMA_8B, H100, small).per_gpu.activation_bytes == 262_668_288
    # An MoE model keeps the original runner: the 0.21 budget, graph estimate included.
    moe = predict_vllm(GPT_OSS_120B, H100, EngineConfig(quantization="mxfp4", era="v2-runner"))
    assert moe.per_gpu.cuda_graph_bytes == 1_428_076_216


def test_linear_attention_raises_the_block_to_hold_a_state_in_one_page() -> None:
    # Qwen3-Next at TP 2 (vLLM 0.10.2 HybridAttentionMambaModelConfig): a Gated DeltaNet state
    # is 3 x (2 x 16 x 128 + 32 x 128) / 2 + 32 / 2 x 128 x 128 = 12,288 + 262,144 = 274,432
    # values x 2 B = 548,864 B; a token of one attention layer is 2 x 1 KV head x 256 x 2 B =
    # 1,024 B; block = 16 x ceil(548,864 / 16,384) = 16 x 34 = 544 tokens (the log: "Setting
    # attention block size to 544 tokens"), a page of 557,056 B, which the state is padded to
    # (557,056 / 548,864 - 1 = 1.49%, the log's "Padding mamba page size by 1.49%").
    config = EngineConfig(tensor_parallel_size=2)
    per_token = {"full": 1_024, "linear": 0}
    assert hybrid_block_size(QWEN3_NEXT_80B, per_token, 2, config) == (544, 548_864)
    # A larger flag is kept; at TP 1 the state doubles (1,097,728 B) against 2,048 B a token:
    # 16 x ceil(1,097,728 / 32,768) = 16 x 34 = 544 again.
    big = EngineConfig(tensor_parallel_size=2, block_size=1024)
    assert hybrid_block_size(QWEN3_NEXT_80B, per_token, 2, big) == (1024, 548_864)
    one = EngineConfig()
    assert hybrid_block_size(QWEN3_NEXT_80B, {"full": 2_048}, 1, one) == (544, 1_097_728)
    # Before 0.10.2 vLLM had no Qwen3-Next: refused, naming the version.
    with pytest.raises(SizingError) as err:
        predict_vllm(QWEN3_NEXT_80B, H200, EngineConfig(tensor_parallel_size=2, era="v0"))
    assert err.value.field == "vllm_version"


def test_qwen3_next_budget_pages_and_lines_at_tp2() -> None:
    # 150 GiB x 0.9 = 144,955,146,240 B. Weights: 79,674,391,296 parameters x 2 B / 2 ranks +
    # the rope cache 262,144 x 64 x 2 B = 33,554,432 + the other half of the 48 routers every
    # rank holds whole, 48 x 2,048 x 512 x 2 B / 2 = 50,331,648 -> 79,758,277,376 (the log:
    # 74.2812 GiB = 79.7583e9 B). Activation (0.8-0.16 era) 9.71 x 1,024 seqs x 151,936 vocab
    # x 4 B = 6,042,822,901; non-torch with custom all-reduce 590,558,003. KV =
    # 58,563,487,960 B. Groups: 12 full + 36 linear -> groups of 12, 1 attention + 3 linear; a
    # block = 557,056 B x 12 = 6,684,672 B -> 8,760 blocks; tokens = 8,760 // 4 groups x 544 =
    # 1,191,360. A 262,144-token request takes ceil(262,144 / 544) = 482 attention blocks and
    # one per linear group: 8,760 / 485 = 18.06x. One request needs (12 x 482 + 36) x 557,056 =
    # 3,242,065,920 B.
    config = EngineConfig(tensor_parallel_size=2, gpu_total_bytes=150 * GIB)
    p = predict_vllm(QWEN3_NEXT_80B, H200, config)
    assert p.per_gpu.weights_bytes == 79_758_277_376
    assert p.per_gpu.kv_cache_bytes == 58_563_487_960
    assert (p.block_size, p.per_gpu.page_bytes, p.per_gpu.block_bytes) == (544, 557_056, 6_684_672)
    assert (p.kv_groups, p.per_gpu.num_blocks, p.blocks_per_request) == (4, 8_760, 485)
    assert p.kv_cache_tokens == 1_191_360
    assert p.max_concurrency == 18.06
    assert p.needed_kv_bytes_per_request == 3_242_065_920
    assert "Maximum concurrency for 262,144 tokens per request: 18.06x" in p.log_lines


def test_qwen3_next_log_arithmetic() -> None:
    # The 2x H200 log of vLLM 0.10.2: 47,878,721,024 B of KV memory // 6,684,672 = 7,162
    # blocks ("num_gpu_blocks is: 7162"), 7,162 // 4 x 544 = 973,760 tokens and 7,162 / 485 =
    # 14.77x, as logged. With that memory the engine's arithmetic gives the same lines.
    config = EngineConfig(tensor_parallel_size=2, gpu_total_bytes=150 * GIB)
    p = predict_vllm(QWEN3_NEXT_80B, H200, config)
    logged_blocks = 47_878_721_024 // p.per_gpu.block_bytes
    assert logged_blocks == 7_162
    assert logged_blocks // p.kv_groups * p.block_size == 973_760
    assert round(logged_blocks / p.blocks_per_request, 2) == 14.77


def test_pipeline_partition_follows_the_release() -> None:
    # vLLM's get_pp_indices: from 0.8 (PR #13839) the remainder goes one layer each to the
    # stages before the last, from the second-to-last back; before it, all to the last stage.
    assert pipeline_partition(61, 2, "v1-0.11") == [31, 30]
    assert pipeline_partition(61, 2, "v0") == [30, 31]
    assert pipeline_partition(94, 4, "v2-runner") == [23, 24, 24, 23]
    assert pipeline_partition(5, 3, "v2-runner") == [2, 2, 1]
    assert pipeline_partition(32, 4, "v0") == [8, 8, 8, 8]


def test_mla_keeps_more_than_its_checkpoint_by_release() -> None:
    # DeepSeek-V3 FP8 at TP 8: 16 heads a rank, q_lora 1,536, kv_lora 512, heads of 128, rope
    # 64, hidden 7,168. V0 0.7.1-0.7.3 materialise W_Q_UK 1,536 x 8,192 = 12,582,912 B FP8 with
    # 12 x 64 fp32 scales (3,072 B) and W_UV_O 8,192 x 7,168 = 58,720,256 B with 64 x 56 scales
    # (14,336 B), W_QR 1,536 x 1,024 x 2 B = 3,145,728, and keep the dequantised kv_b_proj
    # 512 x 4,096: 8,388,608 B in fp32 (0.7.1-0.7.2), 4,194,304 in bf16 (0.7.3, and the only
    # extra from 0.8). Before 0.7.1 there is no MLA, so nothing.
    def extra(layout: str) -> int:
        config = EngineConfig(tensor_parallel_size=8, quantization="fp8", mla_weights=layout)  # type: ignore[arg-type]
        return mla_extra_bytes(DEEPSEEK_V3, config)

    assert extra("absorbed-bf16") == 78_660_608
    assert extra("absorbed-fp32") == 82_854_912
    assert extra("current") == 4_194_304
    assert extra("plain") == 0
    assert for_release(EngineConfig(era="v0"), "0.7.2").mla_weights == "absorbed-fp32"
    assert for_release(EngineConfig(era="v0"), "0.7.3").mla_weights == "absorbed-bf16"
    assert (
        for_release(EngineConfig(era="v0"), "0.7.x").mla_weights == "absorbed-bf16"
    )  # the minor's last release
    assert for_release(EngineConfig(era="v0"), "0.6.6").mla_weights == "plain"
    assert for_release(EngineConfig(era="v1-0.11"), "0.8.0").mla_weights == "current"
    assert for_release(EngineConfig(era="v0"), None).mla_weights == "absorbed-bf16"


def _deepseek_fp8_v0(mla_weights: str, total_gib: float, **flags: object) -> EnginePrediction:
    """DeepSeek-V3/R1's FP8 checkpoint at TP 8 on the V0 engine (the logs below)."""
    config = EngineConfig(
        tensor_parallel_size=8,
        quantization="fp8",
        era="v0",
        mla_weights=mla_weights,  # type: ignore[arg-type]
        gpu_total_bytes=int(total_gib * GIB),
        **flags,  # type: ignore[arg-type]
    )
    return predict_vllm(DEEPSEEK_V3, H100, config)


def test_deepseek_weights_per_rank_on_v0_0_7() -> None:
    # DeepSeek-R1 FP8 at TP 8 on vLLM 0.7.3 (the 8x H200 log: 83.88 GiB). Sharded checkpoint:
    # (671,026,404,352 - 2 x 926,679,040 + 2 x 2 x 926,679,040) / 8 = 84,109,970,304 B (16-bit
    # embedding and head). Each rank also holds whole what vLLM replicates: q_a_proj and
    # kv_a_proj_with_mqa, 7,168 x (1,536 + 512 + 64) = 15,138,816 B FP8 a layer, of which 1/8
    # was counted: 61 x 13,246,464 = 808,034,304; the 58 MoE layers' routers, 16-bit, 7,168 x
    # 256 x 2 B, of which 1/8 was counted at FP8's byte: 58 x (3,670,016 - 229,376) =
    # 199,557,120. The absorbed copies: 61 x 78,660,608 = 4,798,297,088. The rope cache
    # 163,840 x 64 x 2 B = 20,971,520. Total 89,936,830,336 B = 83.76 GiB (-0.14%).
    p = _deepseek_fp8_v0(
        "absorbed-bf16",
        139.81,
        gpu_memory_utilization=0.85,
        max_model_len=128_000,
        max_num_batched_tokens=32_000,
        max_num_seqs=1024,
    )
    assert p.per_gpu.weights_bytes == 89_936_830_336


def test_deepseek_pipeline_stages_on_v0_0_7_2() -> None:
    # vLLM 0.7.2, TP 8 x PP 2 (issue #13074: 39.66 GiB on the first stage). 61 layers split
    # [30, 31] (remainder to the last stage before 0.8). Without the embedding and head
    # (231,669,760 B each a rank): 84,109,970,304 - 463,339,520 = 83,646,630,784 B of layers.
    # A dense layer (the first 3): MLA projections 7,168 x 1,536 + 1,536 x 128 x 192 + 7,168 x
    # 576 + 512 x 128 x 256 + 128 x 128 x 7,168 = 187,105,280 and its FFN 3 x 7,168 x 18,432 =
    # 396,361,728, FP8 / 8 = 72,933,376 B; the 58 MoE layers share the rest,
    # 83,427,830,656 B: 1,438,410,873 each and 1 B more for the first 22. Stage 0 (3 dense +
    # 27 MoE): 218,800,128 + 27 x 1,438,410,873 + 22 = 39,055,893,721; replicated parts 30 x
    # 13,246,464 + 27 x 3,440,640 = 490,291,200; the 0.7.2 absorbed copies (fp32 kv_b) 30 x
    # 82,854,912 = 2,485,647,360; the embedding and, in 0.7.x DeepSeek, an LM head on every
    # stage, 463,339,520; the rope cache 20,971,520. Stage 0 = 42,516,143,321 B = 39.60 GiB
    # (-0.16%). Stage 1, the heavier (the one reported): 31 MoE layers (none with the extra
    # byte) 44,590,737,063 + 31 x (13,246,464 + 3,440,640 + 82,854,912) + the head 231,669,760
    # + 20,971,520 = 47,929,180,839 B.
    p = _deepseek_fp8_v0(
        "absorbed-fp32",
        139.72,
        pipeline_parallel_size=2,
        gpu_memory_utilization=0.95,
        max_model_len=4096,
    )
    assert p.stage_weights_bytes == [42_516_143_321, 47_929_180_839]
    assert p.per_gpu.weights_bytes == 47_929_180_839


def test_deepseek_before_mla_splits_pipeline_stages_the_old_way() -> None:
    # vLLM 0.6.6 (no MLA yet), TP 8 x PP 4 on RTX 4090s (DeepSeek-V3 issue #205: the driver,
    # stage 0, "Loading model weights took 16.9583 GB"). 61 layers over 4 stages before 0.8:
    # [15, 15, 15, 16]. Stage 0: 3 dense layers of 72,933,376 B and 12 MoE layers of
    # 1,438,410,874 B (the first 22 of the 58 MoE layers carry the extra byte; see the PP 2
    # test) = 17,479,730,616; replicated q_a/kv_a projections 15 x 13,246,464 = 198,696,960
    # and routers 12 x 3,440,640 = 41,287,680; no MLA copies before 0.7.1; the embedding and
    # the LM head every stage built, 463,339,520; the rope cache 20,971,520. 18,204,026,296 B =
    # 16.9538 GiB (-0.03%: the checkpoint's FP8 block scales are not counted). Stage 1: 15
    # MoE layers (10 with the extra byte) 21,576,163,105 + 15 x (13,246,464 + 3,440,640) +
    # the head 231,669,760 + 20,971,520 = 22,079,110,945; stage 2 the same less those 10
    # bytes; stage 3: 16 MoE layers
    # 23,014,573,968 + 16 x 16,687,104 + 231,669,760 + 20,971,520 = 23,534,208,912 (the
    # heaviest: the old split gave the last stage the remainder).
    p = _deepseek_fp8_v0(
        "plain",
        23.99,
        pipeline_parallel_size=4,
        mla_latent_cache=False,
        max_model_len=128,
        enforce_eager=True,
    )
    assert p.stage_weights_bytes[0] == 18_204_026_296
    assert p.stage_weights_bytes[1:] == [22_079_110_945, 22_079_110_935, 23_534_208_912]


def test_four_bit_layouts_not_modelled_are_refused_not_sized_as_16_bit() -> None:
    # GGUF or 2:4 sparse Marlin sized as 16-bit would be off by 3-4x: the vLLM method says it
    # does not model them. AWQ, GPTQ (Marlin's layout) and bitsandbytes 4-bit it does.
    for method in ("gguf", "gptq_marlin_24"):
        with pytest.raises(SizingError) as err:
            quantization_of(method, "log")
        assert err.value.field == "log" and "4-bit" in err.value.message
    assert quantization_of("awq_marlin") == quantization_of("AWQ") == "awq"
    assert quantization_of("gptq_marlin") == quantization_of("gptq") == "gptq"
    assert quantization_of("compressed-tensors") == "fp8"  # its common W8A8 schemes


def test_awq_and_gptq_weights_as_marlin_holds_them() -> None:
    # Qwen2.5-7B: 7,615,616,512 parameters, of which the embedding and the untied head,
    # 2 x 152,064 x 3,584 = 1,089,994,752, stay 16-bit (2,179,989,504 B) and the other
    # 6,525,621,760 are 4-bit in groups of 128: GPTQ 0.5 + 2/128 = 66/128 B each
    # (3,364,773,720 B), AWQ 0.5 + 2.5/128 = 133/256 B each (3,390,264,430 B).
    assert loaded_weight_bytes(QWEN25_7B, "gptq", 1) == 3_364_773_720 + 2_179_989_504
    assert loaded_weight_bytes(QWEN25_7B, "awq", 1) == 3_390_264_430 + 2_179_989_504
    # With the rope cache (32,768 x 128 x 2 B = 8,388,608): GPTQ 5,553,151,832 B = 5.1718 GiB,
    # against the 5.1811 GiB a vLLM 0.8.5 log of Qwen2.5-7B-GPTQ-Int4 prints (-0.18%).
    p = predict_vllm(QWEN25_7B, H100, EngineConfig(quantization="gptq", max_model_len=8192))
    assert p.per_gpu.weights_bytes == 5_553_151_832


MI355X = msgspec.structs.replace(
    H100, slug="mi355x", vendor="AMD", compute_capability=None, fp4=True
)


def test_a_dense_mxfp4_checkpoint_is_held_packed_only_where_vllm_multiplies_mx_formats() -> None:
    # Quark's W4A4 MXFP4 (quark_w4a4_mxfp4.py): uint8 values, two a byte, and one uint8 E8M0
    # scale per 32, 17/32 B a weight; embedding and untied head 16-bit. Qwen2.5-7B: the other
    # 6,525,621,760 weights x 17 / 32 = 3,466,736,560 B, plus 2,179,989,504 B 16-bit:
    # 5,646,726,064 B. Without MX GEMMs (CUDA) vLLM dequantises every weight to the 16-bit dtype
    # at load: 2 x 7,615,616,512 = 15,231,233,024 B, as the unquantised model.
    config = EngineConfig(quantization="mxfp4")
    packed, packed_notes = rank_weight_bytes(QWEN25_7B, MI355X, config)
    emulated, emulated_notes = rank_weight_bytes(QWEN25_7B, H100, config)
    assert packed == 3_466_736_560 + 2_179_989_504
    assert emulated == 15_231_233_024 == loaded_weight_bytes(QWEN25_7B, "none", 1)
    assert "packed" in packed_notes[0] and "dequantised" in emulated_notes[0]


GPT_OSS_20B = msgspec.structs.replace(
    GPT_OSS_120B,
    slug="gpt-oss-20b",
    total_params=20_914_757_184,
    active_params=0,
    layers=24,
    experts=32,
    layer_types=("sliding", "full") * 12,
)


def test_sliding_window_reserve_counts_every_batch_in_flight_in_the_v2_runner_era() -> None:
    # gpt-oss-120b on an H100 (8,192 batched tokens), 131,072-token requests: a full layer needs
    # 131,072 / 16 = 8,192 blocks. vLLM PR #47728 (first in the 0.26.0 wheel; the era without a
    # named release takes its last, 0.28; 0.23-0.25 in test_engine_runner.py): the 128-token
    # window keeps window - 1 + the tokens of every batch in flight, two under async
    # scheduling: ceil((127 + 2 x 8,192) / 16) + 1 = 1,032 + 1 = 1,033 blocks, 9,225 a request;
    # before it one batch: ceil(8,319 / 16) + 1 = 521, 8,713 a request.
    config = EngineConfig(max_model_len=131_072, quantization="mxfp4")
    older = predict_vllm(GPT_OSS_120B, H100, msgspec.structs.replace(config, era="v1-0.19"))
    newer = predict_vllm(GPT_OSS_120B, H100, msgspec.structs.replace(config, era="v2-runner"))
    assert (older.blocks_per_request, newer.blocks_per_request) == (8_713, 9_225)


def test_every_model_runs_on_model_runner_v2_from_0_29() -> None:
    # 0.23-0.28 keep MoE models on the original runner (a CUDA-graph estimate in the budget);
    # from 0.29 (vLLM PR #53183) gpt-oss runs on V2: no graph term, and its warm forward peak
    # is the MoE MLP over 8,192 tokens, 4 experts of 2,880: 8,192 x (3 x 4 x 2,880 + 2 x 2,880)
    # x 2 B = 660,602,880 B, above the sampler's 1,024 x 201,088 x 2 = 411,828,224 B. The
    # original runner's graph term is the fitted estimate, 1,428,076,216 B.
    config = EngineConfig(quantization="mxfp4", compile_cache="warm")
    runner = predict_vllm(GPT_OSS_120B, H100, msgspec.structs.replace(config, era="v2-runner"))
    v2 = predict_vllm(GPT_OSS_120B, H100, msgspec.structs.replace(config, era="v2-all"))
    assert runner.per_gpu.cuda_graph_bytes == 1_428_076_216 and v2.per_gpu.cuda_graph_bytes == 0
    assert v2.per_gpu.activation_bytes == 660_602_880


def test_xpu_holds_mxfp4_experts_unpadded_with_16_bit_biases() -> None:
    # Mxfp4MoeBackend.XPU: I rounded to 64 (2,880 stays), H unpadded, bf16 biases. An expert:
    # w13 2 x 2,880 x 2,880 / 2 = 8,294,400 + its scales / 32 = 518,400, w2 4,147,200 + 259,200,
    # biases (5,760 + 2,880) x 2 = 17,280: 13,236,480 B; x 24 layers x 32 = 10,165,616,640 B.
    # Marlin pads H to 3,072 (256) and I to 2,944 (128) for the same experts: w13 2 x 2,944 x
    # 3,072 / 2 = 9,043,968 + 565,248 of scales, w2 4,521,984 + 282,624, biases (5,888 + 3,072)
    # x 2 = 17,920: 14,431,744 B an expert, 11,083,579,392 B for 768.
    assert mxfp4_expert_bytes(GPT_OSS_20B, 1, "xpu") == 10_165_616_640
    assert mxfp4_expert_bytes(GPT_OSS_20B, 1, "marlin") == 11_083_579_392


def test_xpu_blocks_of_64_tokens_and_its_own_non_torch_memory() -> None:
    # On XPU the attention backend takes blocks of max(16, 64) = 64 tokens: a page of one layer
    # is 64 x 8 KV heads x 64 x 2 x 2 B = 131,072 B; 12 full + 12 sliding layers make two groups
    # of 12, a block of 12 x 131,072 = 1,572,864 B. A 131,072-token request: 2,048 full blocks
    # + ceil((127 + 2 x 2,048) / 64) + 1 = 67 sliding blocks = 2,115 (the Arc Pro B60 log's
    # "3.1 GiB KV cache is needed": 2,115 x 1,572,864 = 3.098 GiB). Non-torch memory is the
    # XPU figure fitted for the original runner, 1,580,500,000 B eager and 240,500,000 B more
    # when torch.compile runs; no graph term.
    gpu = GpuSpec(slug="arc-pro-b60", memory_bytes=24_000_000_000, hbm_bytes_per_s=456 * 10**9)
    config = EngineConfig(
        max_model_len=131_072,
        gpu_memory_utilization=0.8,
        quantization="mxfp4",
        era="v2-runner",
        device="xpu",
        enforce_eager=True,
        gpu_total_bytes=24_384_000_000,
    )
    p = predict_vllm(GPT_OSS_20B, gpu, config)
    assert p.block_size == 64 and p.per_gpu.block_bytes == 1_572_864
    assert p.blocks_per_request == 2_115
    assert p.per_gpu.non_torch_bytes == 1_580_500_000 and p.per_gpu.cuda_graph_bytes == 0
    compiled = predict_vllm(GPT_OSS_20B, gpu, msgspec.structs.replace(config, enforce_eager=False))
    assert compiled.per_gpu.non_torch_bytes == 1_821_000_000
    # The budget: 24,384,000,000 x 0.8 = 19,507,200,000. Weights: the experts 10,165,616,640 +
    # the other 20,914,757,184 - 768 x (3 x 2,880 x 2,880 + 2 x 2,880 + 2,880) = 1,797,824,064
    # parameters x 2 B = 3,595,648,128 + the rope cache 131,072 x 64 x 2 = 16,777,216:
    # 13,778,041,984. The original runner's sampler peak (0.28 keeps MoE there) 3.9 x 256 x
    # 201,088 x 4 = 803,065,036. KV 19,507,200,000 - 13,778,041,984 - 803,065,036 -
    # 1,580,500,000 = 3,345,592,980 B = 2,127 blocks; the tokens line (concurrency x
    # max_model_len) 2,127 / 2,115 x 131,072 = 131,815 (the Arc Pro B60 log's own figure).
    assert p.per_gpu.weights_bytes == 13_778_041_984
    assert p.per_gpu.activation_bytes == 803_065_036
    assert p.per_gpu.kv_cache_bytes == 3_345_592_980
    assert (p.per_gpu.num_blocks, p.kv_cache_tokens) == (2_127, 131_815)


def test_v0_activation_is_the_larger_of_the_forward_pass_and_the_sampler() -> None:
    # Llama 3.1 8B on an H100 under V0, 8,192 batched tokens, 256 sequences. Sampler: 38 B x
    # 256 x 128,256 = 1,247,674,368 + the final hidden states 8,192 x 4,096 x 2 = 67,108,864 ->
    # 1,314,783,232. Forward (dense MLP): 8,192 x (4 x 4,096 + 3 x 14,336) x 2 = 973,078,528.
    # The sampler wins; cuBLAS's workspace on Hopper adds 33,554,432: 1,348,337,664 B = 1.2557
    # GiB (PR #10511's Llama 3 8B log: "PyTorch activation peak memory 1.26GiB").
    config = EngineConfig(max_model_len=8192, era="v0")
    p = predict_vllm(LLAMA_8B, H100, config)
    assert p.per_gpu.activation_bytes == 1_348_337_664
    # 20,000 batched tokens: the forward pass wins, 20,000 x 59,392 x 2 = 2,375,680,000 + the
    # workspace = 2,409,234,432 (issue #10517's RTX 3090 logs 2.07 GiB, 8 MiB of workspace).
    longer = msgspec.structs.replace(config, max_num_batched_tokens=20_000)
    assert predict_vllm(LLAMA_8B, H100, longer).per_gpu.activation_bytes == 2_409_234_432


def test_v0_moe_forward_peak_holds_the_fused_moe_caches() -> None:
    # DeepSeek-V3 at TP 8 over 1,000 tokens (H 7,168, 256 experts, top 8, expert width 2,048):
    # 4 x 1,000 x 7,168 x 2 (input, residual, attention output, shared-expert output) =
    # 57,344,000; caches 1,000 x 8 x (3 x 2,048 / 8 + 7,168) x 2 = 126,976,000; router logits
    # 1,000 x 256 x 2 = 512,000; top-k weights and ids 8 x 1,000 x 8 = 64,000; sorted ids
    # 4 x (8,000 + 63 x 256) = 96,512: 184,992,512 B, above a dense layer's 1,000 x (4 x 7,168
    # + 3 x 18,432 / 8) x 2 = 71,168,000. FP8 adds the quantised input, 1,000 x 7,168 +
    # 4 x 1,000 x 56 = 7,392,000.
    none = [0] * 61
    assert v0_forward_peak_bytes(DEEPSEEK_V3, 1_000, 8, "none", none) == 184_992_512
    assert v0_forward_peak_bytes(DEEPSEEK_V3, 1_000, 8, "fp8", none) == 192_384_512
    # An offloaded layer's weights come back for its forward: 1 GB on dense layer 0 makes the
    # dense layer the peak, 71,168,000 + 1,000,000,000.
    heavy = [1_000_000_000] + [0] * 60
    assert v0_forward_peak_bytes(DEEPSEEK_V3, 1_000, 8, "none", heavy) == 1_071_168_000
    # A later pipeline stage (its first layer the model's 31st) has no dense layer: its first
    # layer is an MoE one, 184,992,512 + 1,000,000,000.
    stage = [1_000_000_000] + [0] * 29
    assert v0_forward_peak_bytes(DEEPSEEK_V3, 1_000, 8, "none", stage, 31) == 1_184_992_512


def test_cpu_offload_moves_whole_layers_first_and_keeps_the_edges() -> None:
    # --cpu-offload-gb takes layers in order until the budget is spent (the crossing layer in
    # part); embeddings, head and buffers stay.
    assert offloaded_layer_bytes([100, 100, 100], 250) == [100, 100, 50]
    assert offloaded_layer_bytes([100, 100, 100], 0) == [0, 0, 0]
    assert offloaded_layer_bytes([100, 100, 100], 1_000) == [100, 100, 100]
    # Llama 3.1 8B with every layer offloaded keeps its embedding and LM head, 2 x 128,256 x
    # 4,096 x 2 = 2,101,346,304 B, and the rotary cache 33,554,432: 2,134,900,736 B.
    config = EngineConfig(max_model_len=8192, era="v0", cpu_offload_bytes=2**40)
    assert predict_vllm(LLAMA_8B, H100, config).per_gpu.weights_bytes == 2_134_900_736


def test_w4a16_checkpoints_quantise_only_the_routed_experts() -> None:
    # Qwen3-Next-80B at TP 2: 48 layers x 512 experts x 3 x 2,048 x 512 / 2 = 38,654,705,664
    # expert values a rank; int4 (0.5 B) + a 16-bit scale per 32: 19,327,352,832 +
    # 2,415,919,104 = 21,743,271,936 B (per 128: + 603,979,776 = 19,931,332,608). The other
    # 79,674,391,296 - 48 x 512 x 3 x 2,048 x 512 = 2,364,979,968 parameters stay 16-bit and
    # split by TP: 2,364,979,968 B. The engine adds the other half of the replicated routers
    # (48 x 2,048 x 512 x 2 / 2 = 50,331,648) and the rope cache (33,554,432): 24,192,137,984 B
    # = 22.5308 GiB (the 2x L40S log of vLLM 0.13.0: "Model loading took 22.5313 GiB").
    assert w4a16_expert_bytes(QWEN3_NEXT_80B, 2, 32) == 21_743_271_936
    assert w4a16_expert_bytes(QWEN3_NEXT_80B, 2, 128) == 19_931_332_608
    assert (
        loaded_weight_bytes(QWEN3_NEXT_80B, "w4a16-experts", 2, int4_group_size=32)
        == 24_108_251_904
    )
    config = EngineConfig(tensor_parallel_size=2, quantization="w4a16-experts", int4_group_size=32)
    assert predict_vllm(QWEN3_NEXT_80B, H200, config).per_gpu.weights_bytes == 24_192_137_984
    with pytest.raises(SizingError) as err:
        w4a16_expert_bytes(QWEN3_NEXT_80B, 2, 100)
    assert err.value.field == "int4_group_size"
    with pytest.raises(SizingError) as err:
        predict_vllm(LLAMA_8B, H100, EngineConfig(quantization="w4a16-experts"))
    assert err.value.field == "quantization"


def test_a_max_model_len_beyond_the_models_own_does_not_start() -> None:
    # vLLM's _get_and_verify_max_len: a user max_model_len above max_position_embeddings
    # (Llama 3.1 8B: 131,072) is refused before any memory is counted, however much there is.
    too_long = predict_vllm(LLAMA_8B, H100, EngineConfig(max_model_len=131_073))
    assert not too_long.starts
    assert too_long.failure is not None
    assert too_long.failure.startswith("User-specified max_model_len (131073) is greater than")
    assert "max_position_embeddings=131072" in too_long.failure
    at_limit = predict_vllm(LLAMA_8B, H100, EngineConfig(max_model_len=131_072))
    assert at_limit.max_model_len == 131_072
    assert at_limit.failure is None or "User-specified" not in at_limit.failure


def test_torch_sees_the_catalogues_measured_total_whatever_the_gpus_slug() -> None:
    # The catalogue's MI355X total is torch's own (287.98 GiB in HIP's out-of-memory message:
    # 287.98 x 2^30 = 309,216,170,475 B), so no driver reserve comes off it, under any slug;
    # a row without a measured total loses the H100's 494,000,000 B from nvidia-smi's figure.
    from service.offline import local_catalogue
    from service.sizing.vllm.defaults import torch_visible_bytes

    mi355x = local_catalogue().gpu("mi355x")
    assert torch_visible_bytes(mi355x) == 309_216_170_475
    renamed = msgspec.structs.replace(mi355x, slug="my-mi355x")
    assert torch_visible_bytes(renamed) == 309_216_170_475
    unmeasured = msgspec.structs.replace(mi355x, torch_visible_bytes=0)
    assert torch_visible_bytes(unmeasured) == 309_216_170_475 - 494_000_000
    # MI300X: ROCm's torch sees 191.98 GiB = 206,136,885,888 B, more than the driver's
    # 196,288 MiB = 205,822,885,888 B; an H100 SXM 85,520,809,984 - 494,000,000 B.
    assert torch_visible_bytes(local_catalogue().gpu("mi300x")) == 206_136_885_888
    assert torch_visible_bytes(local_catalogue().gpu("h100-sxm")) == 85_026_809_984
