"""Synthetic replica curves whose figures follow by hand."""

from service.sizing.serving.curve import Curve
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.loop import ServingPrediction
from service.sizing.serving.step import StepCosts

FREE = StepCosts(
    tensor_parallel=1,
    layers=1,
    hidden_size=1,
    dense_weight_bytes=0,
    flops_per_token=0,
    attention_flops_per_context_token=0,
    kv_bytes_per_token=0,
    peak_flops_per_s=1e15,
    hbm_bytes_per_s=1e12,
)
"""A step that costs nothing but its fixed overhead: no weights, FLOPs or KV."""
TEN_MS = Efficiency(
    flops_fraction=1, bandwidth_fraction=1, step_overhead_s=0.01, allreduce_latency_s=0
)
"""Every step takes 10 ms (with FREE)."""


def linear(
    max_batch: float,
    tpot0: float,
    tpot_per_seq: float = 0.0,
    ttft0: float = 0.1,
    ttft_per_seq: float = 0.0,
    output_tokens: float = 100,
) -> Curve:
    """TPOT(b) = tpot0 + tpot_per_seq x b, TTFT(b) = ttft0 + ttft_per_seq x b, and the open
    loop's rate b / (output x TPOT(b))."""

    def at(b: float) -> ServingPrediction:
        tpot = tpot0 + tpot_per_seq * b
        rate = b / (output_tokens * tpot)
        return ServingPrediction(
            ttft_s=ttft0 + ttft_per_seq * b,
            tpot_s=tpot,
            itl_s=tpot,
            output_tokens_per_s=rate * output_tokens,
            total_tokens_per_s=rate * 2 * output_tokens,
            requests_per_s=rate,
            output_tokens_per_s_per_gpu=rate * output_tokens,
            total_tokens_per_s_per_gpu=rate * 2 * output_tokens,
            running_batch=b,
            bottleneck="hbm-bandwidth",
            gpus=1,
        )

    return Curve(max_batch=max_batch, at=at)
