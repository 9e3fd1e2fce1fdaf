"""The vLLM method: page and block arithmetic, weights as loaded, the budget and the log lines.

Numbers are worked by hand from vLLM's rules (shared/reference/models.md) and the fitted
constants documented in service/sizing/engine.py.
"""

import msgspec
import pytest

from service.accuracy import report
from service.sizing.engine import EngineConfig, kv_groups, loaded_weight_bytes, predict_vllm
from service.sizing.errors import SizingError
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from tests.unit.sizing.specs import LLAMA_8B, LLAMA_70B

GIB = 2**30
H100 = GpuSpec(
    slug="h100-sxm",
    memory_bytes=80_000_000_000,
    driver_visible_bytes=85_520_809_984,
    hbm_bytes_per_s=3_350_000_000_000,
)


def test_hybrid_groups_follow_vllm() -> None:
    # gpt-oss: 18 sliding + 18 full -> groups of 18, one of each type.
    assert msgspec.structs.astuple(kv_groups(("sliding", "full") * 18)) == (18, 1, 1)
    # Gemma 3: 52 sliding + 10 full; 52 >= 1.5 x 10, so groups of 10: 1 full + ceil(52/10) = 6.
    g = kv_groups(("sliding",) * 52 + ("full",) * 10)
    assert msgspec.structs.astuple(g) == (10, 1, 6)
    # One attention type: one group of every layer.
    assert msgspec.structs.astuple(kv_groups(("full",) * 32)) == (32, 1, 0)


def test_weights_as_loaded() -> None:
    # 16-bit: 8,030,261,248 x 2 B; TP 2 halves it.
    assert loaded_weight_bytes(LLAMA_8B, "none", 1) == 16_060_522_496
    assert loaded_weight_bytes(LLAMA_8B, "none", 2) == 8_030_261_248
    # FP8 70B: embedding and LM head (128,256 x 8,192 = 1,050,673,152 each) stay 16-bit:
    # (70,553,706,496 - 2,101,346,304) x 1 + 2,101,346,304 x 2 = 72,655,052,800 B (67.66 GiB;
    # the llm-d log says 67.72).
    assert loaded_weight_bytes(LLAMA_70B, "fp8", 1) == 72_655_052_800


def test_llama_8b_on_80_gib_budget_and_lines() -> None:
    # total 80 GiB x 0.9 = 77,309,411,328; weights 16,060,522,496; activation 9.71 x 1,024 seqs
    # x 128,256 vocab x 4 B = 5,101,018,152; non-torch 139,586,437 (TP 1):
    # KV = 56,008,284,243 B. Page = 16 tokens x 2 x 8 heads x 128 x 2 B = 65,536 B; a block
    # across 32 layers = 2,097,152 B -> 26,706 blocks = 427,296 tokens; 26,706 / (8,192 / 16)
    # = 52.16x for 8,192-token requests.
    config = EngineConfig(gpu_total_bytes=80 * GIB, max_model_len=8192)
    p = predict_vllm(LLAMA_8B, H100, config)
    assert p.per_gpu.usable_bytes == 77_309_411_328
    assert p.per_gpu.activation_bytes == 5_101_018_152
    assert p.per_gpu.kv_cache_bytes == 56_008_284_243
    assert p.per_gpu.block_bytes == 2_097_152
    assert p.kv_cache_tokens == 427_296
    assert p.max_concurrency == 52.16
    assert "GPU KV cache size: 427,296 tokens" in p.log_lines
    assert "Maximum concurrency for 8,192 tokens per request: 52.16x" in p.log_lines
    assert (p.defaults.max_num_batched_tokens, p.defaults.max_num_seqs) == (8192, 1024)


def test_defaults_depend_on_the_gpu() -> None:
    # An A100 (or any GPU under 70 GiB) gets vllm serve's smaller defaults: 2048 tokens, 256 seqs.
    a100 = GpuSpec(slug="a100-80gb", memory_bytes=80 * 10**9, hbm_bytes_per_s=2 * 10**12)
    p = predict_vllm(LLAMA_8B, a100, EngineConfig(gpu_total_bytes=80 * GIB, max_model_len=8192))
    assert (p.defaults.max_num_batched_tokens, p.defaults.max_num_seqs) == (2048, 256)
    assert "A100" in p.defaults.rule


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


def test_accuracy_on_collected_logs_is_what_it_is() -> None:
    # The true current accuracy on tests/data/vllm_logs (python -m service accuracy prints it):
    # KV tokens within 5% in 10 of 11 cases that log or imply tokens, every failure predicted,
    # weights within 1% in 13 of 15 (gpt-oss-120b MXFP4 at TP 4 on A100 and under vLLM 0.10.1
    # on H100 load differently from the padded layout modelled).
    rep = report()
    assert (rep.tokens_within, rep.tokens_cases) == (10, 11)
    assert (rep.failures_ok, rep.failure_cases) == (5, 5)
    assert (rep.weights_within, rep.weights_cases) == (13, 15)
    assert rep.tokens_within >= 0.9 * rep.tokens_cases


@pytest.mark.xfail(
    reason="The issue's bar also asks weights within 1% on every case: two gpt-oss-120b MXFP4 "
    "logs (TP 4 on A100, vLLM 0.10.1 on H100) load 2-6% more than the padded layout modelled; "
    "no log shows that layout, so it is not faked.",
    strict=True,
)
def test_accuracy_bar() -> None:
    assert report().meets_bar


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
