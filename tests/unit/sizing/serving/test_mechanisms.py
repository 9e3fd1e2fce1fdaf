"""The serving mechanisms that replaced the 160 us per sequence, each by hand."""

import msgspec
import pytest

from service.offline import local_catalogue
from service.sizing.serving.deploy import (
    activation_bytes_per_token,
    linear_kv_share,
    state_bytes_per_sequence,
    window_kv_share,
)
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.engines import async_scheduling
from service.sizing.serving.simulate import POLICIES, Policy, lengths, simulate
from service.sizing.serving.step import StepCosts, step_time

UNIT = StepCosts(
    tensor_parallel=1,
    layers=1,
    hidden_size=1,
    dense_weight_bytes=1_000_000_000,
    flops_per_token=250_000_000,
    attention_flops_per_context_token=0,
    kv_bytes_per_token=0,
    peak_flops_per_s=1e12,
    hbm_bytes_per_s=1e12,
)
"""1 GB of weights at 1e12 B/s (1 ms) and 2.5e8 FLOPs a token at 1e12 FLOP/s (0.25 ms)."""


def eff(**kw: float) -> Efficiency:
    return Efficiency(
        flops_fraction=1, bandwidth_fraction=1, step_overhead_s=0, allreduce_latency_s=0, **kw
    )


def prefill_s(costs: StepCosts, scales: Efficiency, tokens: float, context: float = 0) -> float:
    """One step of ``tokens`` prompt tokens (each attending to ``context``), nothing decoding."""
    return step_time(
        costs,
        scales,
        prefill_tokens=tokens,
        prefill_context=context,
        decode_sequences=0,
        decode_context=0,
    ).total_s


def test_a_kernel_hides_its_overlap_share_of_the_shorter_side() -> None:
    # 2 tokens x 2.5e8 FLOPs = 5e8 / 1e12 = 0.5 ms of math; 1e9 B / 1e12 = 1 ms of reads.
    # Overlap 1: max = 1 ms; 0.5: 1 + 0.5 x 0.5 = 1.25 ms; 0: 1.5 ms.
    for hide, want in ((1.0, 1.0e-3), (0.5, 1.25e-3), (0.0, 1.5e-3)):
        assert prefill_s(UNIT, eff(kernel_overlap=hide), 2) == pytest.approx(want, rel=1e-9)


def test_fp8_gemms_reach_the_scaled_fraction_of_their_peak() -> None:
    # 8 tokens: 2e9 FLOPs at 1e12 x 0.5 = 4 ms (> the 1 ms of reads, overlap 1).
    fp8 = msgspec.structs.replace(UNIT, fp8_gemms=True)
    assert prefill_s(fp8, eff(fp8_flops_scale=0.5), 8) == pytest.approx(4e-3, rel=1e-9)


def test_dense_fp8_gemms_take_their_own_scale_and_the_experts_the_shared_one() -> None:
    # 8 tokens of 2.5e8 FLOPs, 1e8 of them a routed expert's (2 experts, 1 a token, 1 B each:
    # their reads are nothing). Experts: 8 x 1e8 = 8e8 FLOPs at 1e12 x 0.5 = 1.6 ms; dense:
    # 8 x 1.5e8 = 1.2e9 FLOPs at 1e12 x 0.8 = 1.5 ms, longer than their 1 ms of reads:
    # 3.1 ms. Without a dense scale both take 0.5: 8 x 2.5e8 = 2e9 / 5e11 = 4 ms.
    moe = msgspec.structs.replace(
        UNIT,
        fp8_gemms=True,
        experts=2,
        experts_per_token=1,
        expert_bytes_per_expert=1,
        expert_flops_per_token=1e8,
    )
    split = msgspec.structs.replace(eff(fp8_flops_scale=0.5), fp8_dense_flops_scale=0.8)
    assert prefill_s(moe, split, 8) == pytest.approx(3.1e-3, rel=1e-6)
    assert prefill_s(moe, eff(fp8_flops_scale=0.5), 8) == pytest.approx(4e-3, rel=1e-6)


def test_fp4_linear_layers_run_at_the_fp4_peak_and_attention_at_the_fp8_one() -> None:
    # 16 prompt tokens, each attending to 1e3 context tokens at 1e5 FLOPs: 1.6e9 attention FLOPs
    # at the FP8 peak 1e12 x 0.5 = 3.2 ms; the linear layers' 16 x 2.5e8 = 4e9 FLOPs at the FP4
    # peak 2e12 x the dense scale 0.8 = 2.5 ms (their 1 ms of reads hidden): 5.7 ms. Without
    # the FP4 figure they take the FP8 peak's 1e12 x 0.8: 5 ms, and 8.2 ms in all.
    fp8 = msgspec.structs.replace(UNIT, fp8_gemms=True, attention_flops_per_context_token=1e5)
    fp4 = msgspec.structs.replace(fp8, fp4_dense_flops_per_s=2e12)
    scales = msgspec.structs.replace(eff(fp8_flops_scale=0.5), fp8_dense_flops_scale=0.8)
    assert prefill_s(fp4, scales, 16, 1000) == pytest.approx(5.7e-3, rel=1e-9)
    assert prefill_s(fp8, scales, 16, 1000) == pytest.approx(8.2e-3, rel=1e-9)


def test_the_host_adds_to_the_step_unless_the_engine_overlaps_it() -> None:
    # 10 decoding sequences x 100 us = 1 ms on the host; the GPU: 10 x 2.5e8 = 2.5e9 FLOPs
    # = 2.5 ms against 1 ms of reads: 2.5 ms. Serial 3.5 ms; overlapped max(2.5, 1) = 2.5 ms.
    host = eff(sequence_overhead_s=100e-6)
    serial = step_time(
        UNIT, host, prefill_tokens=0, prefill_context=0, decode_sequences=10, decode_context=0
    )
    overlapped = step_time(
        msgspec.structs.replace(UNIT, async_scheduling=True),
        host,
        prefill_tokens=0,
        prefill_context=0,
        decode_sequences=10,
        decode_context=0,
    )
    assert serial.total_s == pytest.approx(3.5e-3, rel=1e-9)
    assert overlapped.total_s == pytest.approx(2.5e-3, rel=1e-9)


def test_activations_stream_every_token_through_every_rank() -> None:
    # 3 prompt tokens x 1e8 B = 3e8 B at 1e12 B/s = 0.3 ms, after the GEMMs' max(0.75 ms of
    # math, 1 ms of reads) = 1 ms: 1.3 ms.
    costs = msgspec.structs.replace(UNIT, activation_bytes_per_token=1e8)
    assert prefill_s(costs, eff(), 3) == pytest.approx(1.3e-3, rel=1e-9)


def test_activation_bytes_count_hidden_and_intermediate_passes() -> None:
    cat = local_catalogue()
    # Qwen3-8B, TP1: 36 x (16 x 4,096 + 6 x 12,288) x 2 B = 36 x 139,264 x 2 = 10,027,008.
    assert activation_bytes_per_token(cat.model("qwen3-8b"), 1) == 10_027_008
    # GLM-4.5-Air at TP4: 45 MoE layers x (16 x 4,096 + 8 x (3 x 4,096 + 6 x 1,408 / 4)) =
    # 45 x 180,736 = 8,133,120, and its dense layer 16 x 4,096 + 6 x 10,944 / 4 = 81,952:
    # 8,215,072 values x 2 B = 16,430,144.
    assert activation_bytes_per_token(cat.model("glm-4.5-air"), 4) == 16_430_144


def test_the_client_draws_uniform_lengths_around_the_means() -> None:
    # 4 requests, means 10 in and 20 out, ratio 0: uniform up to 20 and 40, quantiles at
    # 1/8, 3/8, 5/8, 7/8: 2.5, 7.5, 12.5, 17.5 -> 2, 8, 12, 18 (round half to even) and
    # 5, 15, 25, 35; ratio 0.5 around the output mean 20: from 13.33 to 26.67, at 15, 18.33,
    # 21.67, 25 -> 15, 18, 22, 25.
    got = lengths(4, 10, 20, "uniform", low_ratio=0.0)
    assert sorted(i for i, _ in got) == [2, 8, 12, 18]
    assert sorted(o for _, o in got) == [5, 15, 25, 35]
    half = lengths(4, 10, 20, "uniform", low_ratio=0.5)
    assert sorted(o for _, o in half) == [15, 18, 22, 25]


def test_vllm_schedules_asynchronously_from_014_or_when_told() -> None:
    assert not async_scheduling("vllm", "0.13.0")
    assert async_scheduling("vllm", "v0.14.0")
    assert async_scheduling("vllm", "0.15.1")
    assert not async_scheduling("vllm", None)
    assert async_scheduling("vllm", "0.11.0", flag=True)
    assert async_scheduling("sglang", None)
    assert async_scheduling("tensorrt-llm", "1.0.0")


def test_a_preempted_request_finds_its_blocks_in_the_prefix_cache() -> None:
    # Two requests of 10 prompt tokens and 30 output tokens in a pool of 50 tokens: both are
    # admitted, and the pool runs out after 15 decode steps (20 + 2 x 15 = 50); the later one
    # is preempted. With the prefix cache it comes back to find its 25 tokens intact unless
    # the first request has allocated over them; without it, it recomputes them all.
    # Every token, prompt or decode, costs 1 ms (1e9 FLOPs at 1e12 FLOP/s; no weights), so the
    # recomputed tokens show in the duration:
    costs = msgspec.structs.replace(UNIT, dense_weight_bytes=0, flops_per_token=1e9)
    run = {
        "max_num_seqs": 8,
        "token_budget": 64,
        "kv_pool_tokens": 50,
        "requests": [(10, 30), (10, 30)],
        "concurrency": None,
    }
    cached = simulate(costs, eff(), policy=POLICIES["vllm"], **run)  # type: ignore[arg-type]
    recompute = simulate(costs, eff(), policy=Policy(), **run)  # type: ignore[arg-type]
    assert cached.preemptions == recompute.preemptions >= 1
    assert cached.duration_s < recompute.duration_s


def test_sliding_window_layers_read_only_their_window() -> None:
    # gpt-oss-120b: 18 sliding and 18 full layers, window 128: half its KV is windowed.
    # One sequence at 1,128 tokens of context, 1,000 B of KV a token: 0.5 x 1,128 + 0.5 x 128
    # = 628 tokens' worth, 628,000 B at 1e12 B/s = 0.628 us (no weights, no FLOPs).
    assert window_kv_share(local_catalogue().model("gpt-oss-120b")) == 0.5
    costs = msgspec.structs.replace(
        UNIT,
        dense_weight_bytes=0,
        flops_per_token=0,
        kv_bytes_per_token=1000,
        window_kv_share=0.5,
        window_tokens=128,
    )
    t = step_time(
        costs, eff(), prefill_tokens=0, prefill_context=0, decode_sequences=1, decode_context=1128
    )
    assert t.total_s == pytest.approx(0.628e-6, rel=1e-9)


def test_linear_attention_layers_move_their_state_not_their_share_of_the_pool() -> None:
    # Qwen3-Next-80B-A3B: 36 linear-attention layers of 48, so 36 / 48 = 0.75 of the pool's
    # bytes a token are their padded state pages. At TP 4 one layer's state is the convolution's
    # 3 x (2 x 16 x 128 + 32 x 128) / 4 = 3 x 2,048 = 6,144 values and 32 / 4 = 8 heads of
    # 128 x 128 = 131,072: 137,216 values x 2 B = 274,432 B, read and written back in 36
    # layers: 2 x 36 x 274,432 = 19,759,104 B a sequence a step.
    qwen3_next = local_catalogue().model("qwen3-next-80b-a3b")
    assert linear_kv_share(qwen3_next) == 0.75
    assert state_bytes_per_sequence(qwen3_next, 4, 1) == 19_759_104
    # One sequence at 1,000 tokens, 4,000 B a token in the pool: the attention layers' quarter,
    # 1,000 x 1,000 B = 1e6 B, plus its states' 19,759,104 B = 20,759,104 B at 1e12 B/s.
    costs = msgspec.structs.replace(
        UNIT,
        dense_weight_bytes=0,
        flops_per_token=0,
        kv_bytes_per_token=4000,
        linear_kv_share=0.75,
        state_bytes_per_sequence=19_759_104,
    )
    t = step_time(
        costs, eff(), prefill_tokens=0, prefill_context=0, decode_sequences=1, decode_context=1000
    )
    assert t.total_s == pytest.approx(20.759104e-6, rel=1e-9)


def test_an_mxfp4_checkpoints_dense_gemms_and_attention_run_at_the_bf16_peak() -> None:
    # Only the routed experts are 4-bit: they run at the FP8 peak (2e12 x 0.5 = 1e12), the
    # dense GEMMs and attention at the BF16 one (5e11, fraction 1). 8 prompt tokens of
    # 2.5e8 FLOPs, 1e8 of them a routed expert's, each attending to 100 tokens of 1e6 FLOPs:
    # experts 8 x 1e8 = 8e8 / 1e12 = 0.8 ms; dense 8 x 1.5e8 = 1.2e9 / 5e11 = 2.4 ms (above
    # their 1 ms of reads); attention 8 x 100 x 1e6 = 8e8 / 5e11 = 1.6 ms: 4.8 ms.
    # All in FP8: dense 1.2e9 / (2e12 x 0.8) = 0.75 ms, so their reads' 1 ms; attention
    # 8e8 / 1e12 = 0.8 ms: 1 + 0.8 + 0.8 = 2.6 ms.
    fp8 = msgspec.structs.replace(
        UNIT,
        peak_flops_per_s=2e12,
        fp8_gemms=True,
        experts=2,
        experts_per_token=1,
        expert_bytes_per_expert=1,
        expert_flops_per_token=1e8,
        attention_flops_per_context_token=1e6,
    )
    mxfp4 = msgspec.structs.replace(fp8, bf16_dense_flops_per_s=5e11)
    scales = msgspec.structs.replace(eff(fp8_flops_scale=0.5), fp8_dense_flops_scale=0.8)
    assert prefill_s(mxfp4, scales, 8, 100) == pytest.approx(4.8e-3, rel=1e-6)
    assert prefill_s(fp8, scales, 8, 100) == pytest.approx(2.6e-3, rel=1e-6)
