"""The decode-speed ceiling of a memory plan.

Seed rule (part 7, "Which GPUs hold which models?"): a cell that says 1 still needs checking for
speed. Decode is memory-bound: each new token reads the active weights once and each
conversation's KV cache once, so bytes read per GPU / HBM bandwidth is a floor on the time per
step. Pipeline stages run one after another for a token, so their times add up.
"""

import msgspec


class DecodeCeiling(msgspec.Struct, frozen=True, kw_only=True):
    bytes_per_token_per_gpu: int
    """One conversation: active-weight slice plus its KV slice at the asked context."""
    s_per_token: float
    tokens_per_s_per_sequence: float
    concurrency: int
    bytes_per_step_per_gpu: int
    """All conversations at once: the weights are read once, every conversation's KV once."""
    s_per_step: float
    tokens_per_s_aggregate: float


def decode_ceiling(
    active_weight_bytes_per_gpu: int,
    kv_bytes_per_sequence_per_gpu: int,
    concurrency: int,
    hbm_bytes_per_s: int,
    pipeline_stages: int = 1,
) -> DecodeCeiling:
    single = active_weight_bytes_per_gpu + kv_bytes_per_sequence_per_gpu
    batch = active_weight_bytes_per_gpu + concurrency * kv_bytes_per_sequence_per_gpu
    s_single = pipeline_stages * single / hbm_bytes_per_s
    s_batch = pipeline_stages * batch / hbm_bytes_per_s
    return DecodeCeiling(
        bytes_per_token_per_gpu=single,
        s_per_token=s_single,
        tokens_per_s_per_sequence=1 / s_single,
        concurrency=concurrency,
        bytes_per_step_per_gpu=batch,
        s_per_step=s_batch,
        tokens_per_s_aggregate=concurrency / s_batch,
    )
