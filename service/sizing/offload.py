"""Offload: running a model that does not fit with part of its weights in CPU memory.

Seed rule (part 7, "Why is offloading to CPU memory so slow?"): every token needs every weight
once. Weights in GPU memory are read at HBM speed; weights in CPU memory cross the host link for
every token. Every token waits for both, so time per step = resident / HBM bandwidth +
offloaded / link bandwidth. One trip of the weights over the link serves every request of a
batch, which is why batching helps a little.

With several GPUs, each holds and streams its own slice over its own link, in parallel.
"""

import msgspec

from service.sizing.errors import require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.kv import kv_shape
from service.sizing.models import ModelSpec
from service.sizing.plan import (
    Workload,
    budget_bytes_per_gpu,
    plan_if_splittable,
    validate_inputs,
)
from service.sizing.weights import model_weight_bytes


class FullyResident(msgspec.Struct, frozen=True, kw_only=True):
    """The alternative: enough GPUs to hold the whole model, read at HBM speed."""

    gpu_count: int | None
    weights_bytes_per_gpu: int | None
    s_per_step: float | None
    tokens_per_s: float | None


class Offload(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    gpu: str
    gpu_count: int
    weight_format: str
    link: str
    link_bytes_per_s: int
    weights_bytes: int
    kv_reserve_bytes: int
    resident_bytes: int
    offloaded_bytes: int
    hbm_s_per_step: float
    link_s_per_step: float
    s_per_step: float
    tokens_per_s: float
    """One conversation: one token per step."""
    batch_size: int
    batch_tokens_per_s: float
    """A batch that shares one pass of the weights: batch_size tokens per step."""
    gpu_idle_fraction: float
    """Share of each step the GPU waits on the link."""
    fully_resident: FullyResident


def offload(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    link: LinkSpec,
    workload: Workload,
    gpu_count: int = 1,
    batch_size: int = 1,
    resident_bytes: int | None = None,
) -> Offload:
    validate_inputs(model, gpu, workload)
    require(gpu_count >= 1, "gpu_count", "must be at least 1")
    require(batch_size >= 1, "batch_size", "must be at least 1")
    require(link.bytes_per_s_per_direction > 0, "link", "has no bandwidth")
    weights = model_weight_bytes(model, weight_format)
    # The default keeps a KV reserve for the batch at the workload's context on every GPU.
    per_gpu_reserve = -(
        -batch_size
        * kv_shape(model, kv_format).bytes_per_sequence(workload.context_tokens)
        // gpu_count
    )
    room = gpu_count * (budget_bytes_per_gpu(gpu, workload) - per_gpu_reserve)
    if resident_bytes is None:
        resident = max(0, min(weights, room))
    else:
        require(resident_bytes >= 0, "resident_bytes", "must not be negative")
        require(resident_bytes <= weights, "resident_bytes", "cannot exceed the weights")
        resident = resident_bytes
    offloaded = weights - resident
    hbm_s = resident / gpu_count / gpu.hbm_bytes_per_s
    link_s = offloaded / gpu_count / link.bytes_per_s_per_direction
    step_s = hbm_s + link_s
    return Offload(
        model=model.slug,
        gpu=gpu.slug,
        gpu_count=gpu_count,
        weight_format=weight_format.slug,
        link=link.slug,
        link_bytes_per_s=link.bytes_per_s_per_direction,
        weights_bytes=weights,
        kv_reserve_bytes=per_gpu_reserve * gpu_count,
        resident_bytes=resident,
        offloaded_bytes=offloaded,
        hbm_s_per_step=hbm_s,
        link_s_per_step=link_s,
        s_per_step=step_s,
        tokens_per_s=1 / step_s if step_s else 0.0,
        batch_size=batch_size,
        batch_tokens_per_s=batch_size / step_s if step_s else 0.0,
        gpu_idle_fraction=link_s / step_s if step_s else 0.0,
        fully_resident=fully_resident(model, gpu, weight_format, kv_format, workload, batch_size),
    )


def fully_resident(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    batch_size: int,
) -> FullyResident:
    """The fewest GPUs that hold the model for ``batch_size`` conversations, and its speed:
    per-GPU weight slice / HBM bandwidth (the seed's four H100s at about 10.5 ms)."""
    batch = msgspec.structs.replace(workload, concurrency=batch_size)
    p = plan_if_splittable(model, gpu, weight_format, kv_format, batch)
    if p is None or not p.fits:
        return FullyResident(
            gpu_count=None, weights_bytes_per_gpu=None, s_per_step=None, tokens_per_s=None
        )
    slice_bytes = p.weights_bytes / p.gpu_count
    step = p.pipeline_parallel * slice_bytes / gpu.hbm_bytes_per_s
    return FullyResident(
        gpu_count=p.gpu_count,
        weights_bytes_per_gpu=p.per_gpu.weights_bytes,
        s_per_step=step,
        tokens_per_s=1 / step,
    )
