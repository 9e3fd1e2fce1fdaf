"""The decode-speed ceiling of a memory plan.

Seed rule (part 7, "Which GPUs hold which models?"): a cell that says 1 still needs checking for
speed. Decode is memory-bound: a step reads what ``service.sizing.decode`` says (the active
weights, for a batch of MoE the experts it touches, and each conversation's KV once), so bytes
read per GPU / HBM bandwidth is a floor on the time per step. Pipeline stages run one after
another for a token, so their times add up.
"""

import msgspec

from service.sizing.decode import decode_step
from service.sizing.models import ModelSpec


class DecodeCeiling(msgspec.Struct, frozen=True, kw_only=True):
    bytes_per_token_per_gpu: int
    """One conversation: the weights one token reads plus its KV slice at the asked context."""
    s_per_token: float
    tokens_per_s_per_sequence: float
    concurrency: int
    bytes_per_step_per_gpu: int
    """All conversations at once: the weights the batch reads (an MoE batch touches more
    experts than one token), read once, and every conversation's KV once."""
    s_per_step: float
    tokens_per_s_aggregate: float
    experts_read_per_layer: float = 0.0
    """MoE: distinct experts a layer reads for the whole batch, uniform routing assumed
    (``service.sizing.decode``); 0 for a dense model."""


def decode_ceiling(
    model: ModelSpec,
    weight_bytes_per_gpu: int,
    kv_bytes_per_sequence_per_gpu: int,
    concurrency: int,
    hbm_bytes_per_s: int,
    pipeline_stages: int = 1,
) -> DecodeCeiling:
    """``weight_bytes_per_gpu``: the slice of the weights a GPU holds (all of them, not the
    active part: ``decode_step`` takes what a step reads out of it)."""
    single = decode_step(model, weight_bytes_per_gpu, kv_bytes_per_sequence_per_gpu, 1)
    batch = decode_step(model, weight_bytes_per_gpu, kv_bytes_per_sequence_per_gpu, concurrency)
    s_single = pipeline_stages * single.bytes_per_gpu / hbm_bytes_per_s
    s_batch = pipeline_stages * batch.bytes_per_gpu / hbm_bytes_per_s
    return DecodeCeiling(
        bytes_per_token_per_gpu=single.bytes_per_gpu,
        s_per_token=s_single,
        tokens_per_s_per_sequence=1 / s_single,
        concurrency=concurrency,
        bytes_per_step_per_gpu=batch.bytes_per_gpu,
        s_per_step=s_batch,
        tokens_per_s_aggregate=concurrency / s_batch,
        experts_read_per_layer=batch.experts_read_per_layer,
    )
