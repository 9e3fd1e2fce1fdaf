"""Offload: running a model that does not fit with part of its weights in CPU memory.

Seed rule (part 7, "Why is offloading to CPU memory so slow?"): every token needs every weight
once. Weights in GPU memory are read at HBM speed; weights in CPU memory cross the host link for
every token. Every token waits for both, so time per step = resident / HBM bandwidth +
offloaded / link bandwidth. One trip of the weights over the link serves every request of a
batch, which is why batching helps a little.

With several GPUs, each holds and streams its own slice over its own link, in parallel.

What a step reads is ``service.sizing.decode``'s rule, the one /plan's decode ceiling uses: the
weights a batch touches (for MoE, the shared weights and the experts it routes to) and each
sequence's KV. Which offloaded bytes cross the link depends on the engine's mechanism
(``OffloadMechanism``); for a dense model both move every offloaded byte, as the seed says.
"""

from typing import Literal

import msgspec

from service.sizing import advice
from service.sizing.advice import PlanWarning
from service.sizing.decode import (
    UNIFORM_ROUTING,
    DecodeStep,
    bytes_read,
    decode_step,
    routed_expert_params,
)
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
from service.sizing.units import ceil_div, label_bytes
from service.sizing.weights import model_weight_bytes

OffloadMechanism = Literal["uva", "copy"]
MECHANISMS: dict[str, str] = {
    "uva": (
        "vLLM --cpu-offload-gb from 0.8.4 on the V1 engine (vllm PR #15354), and the default of "
        "the later vllm/model_executor/offloader/uva.py: offloaded weights stay in pinned CPU "
        "memory and the kernels read them in place over the link (unified virtual addressing), "
        "so only the offloaded bytes a step touches cross it: for MoE, the experts it routes to"
    ),
    "copy": (
        "vLLM --cpu-offload-gb on the V0 engine (maybe_offload_to_cpu, vllm PR #6496, to V0's "
        "removal), or with VLLM_WEIGHT_OFFLOADING_DISABLE_UVA=1: before an offloaded layer runs "
        "its whole state dict is copied to the GPU (functional_call), so every offloaded byte "
        "crosses the link every step, whichever experts the tokens use"
    ),
}
"""What each mechanism moves per step, as the answer states it (read in vLLM's
model_executor/models/utils.py ``maybe_offload_to_cpu`` and offloader/uva.py). Both are timed at
the link's rate per direction: UVA's in-kernel reads of host memory may reach less, and the copy
path's second read of the copied bytes from HBM is not counted (the seed counts neither)."""


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
    mechanism: OffloadMechanism
    mechanism_note: str
    """What the mechanism moves over the link per step, and which engine releases do it."""
    weights_bytes: int
    kv_reserve_bytes: int
    resident_bytes: int
    offloaded_bytes: int
    step: DecodeStep
    """What one step reads on each GPU, wherever it lies (``service.sizing.decode``, the rule
    /plan's decode ceiling uses)."""
    resident_read_bytes: int
    """Resident weight bytes a step reads from HBM, all GPUs."""
    kv_read_bytes: int
    """KV bytes a step reads from HBM (every conversation of the batch), all GPUs."""
    link_bytes_per_step: int
    """Offloaded bytes that cross the link per step, all GPUs: every offloaded byte under
    ``copy``; under ``uva`` only those the step reads (for MoE, the experts it routes to)."""
    hbm_s_per_step: float
    """Resident weights read at HBM speed."""
    kv_s_per_step: float
    link_s_per_step: float
    s_per_step: float
    tokens_per_s: float
    """Each conversation of the batch: one token per step."""
    batch_size: int
    batch_tokens_per_s: float
    """The batch, which shares one pass of the weights: batch_size tokens per step."""
    gpu_idle_fraction: float
    """Share of each step the GPU waits on the link."""
    fully_resident: FullyResident
    warnings: list[PlanWarning] = []


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
    mechanism: OffloadMechanism = "uva",
) -> Offload:
    validate_inputs(model, gpu, workload)
    require(gpu_count >= 1, "gpu_count", "must be at least 1")
    require(batch_size >= 1, "batch_size", "must be at least 1")
    require(link.bytes_per_s_per_direction > 0, "link", "has no bandwidth")
    require(mechanism in MECHANISMS, "mechanism", f"must be one of {', '.join(MECHANISMS)}")
    weights = model_weight_bytes(model, weight_format)
    sequence_kv = kv_shape(model, kv_format).bytes_per_sequence(workload.context_tokens)
    # The default keeps a KV reserve for the batch at the workload's context on every GPU.
    per_gpu_reserve = ceil_div(batch_size * sequence_kv, gpu_count)
    room = gpu_count * (budget_bytes_per_gpu(gpu, workload) - per_gpu_reserve)
    if resident_bytes is None:
        resident = max(0, min(weights, room))
    else:
        require(resident_bytes >= 0, "resident_bytes", "must not be negative")
        require(resident_bytes <= weights, "resident_bytes", "cannot exceed the weights")
        resident = resident_bytes
    offloaded = weights - resident
    # Each GPU holds and reads its own slice: of the resident part, of the offloaded part.
    step = decode_step(
        model, ceil_div(weights, gpu_count), ceil_div(sequence_kv, gpu_count), batch_size
    )
    resident_read = bytes_read(model, ceil_div(resident, gpu_count), batch_size)
    offloaded_slice = ceil_div(offloaded, gpu_count)
    crossing = (
        offloaded_slice if mechanism == "copy" else bytes_read(model, offloaded_slice, batch_size)
    )
    hbm_s = resident_read / gpu.hbm_bytes_per_s
    kv_s = step.kv_bytes_per_gpu / gpu.hbm_bytes_per_s
    link_s = crossing / link.bytes_per_s_per_direction
    step_s = hbm_s + kv_s + link_s
    return Offload(
        model=model.slug,
        gpu=gpu.slug,
        gpu_count=gpu_count,
        weight_format=weight_format.slug,
        link=link.slug,
        link_bytes_per_s=link.bytes_per_s_per_direction,
        mechanism=mechanism,
        mechanism_note=MECHANISMS[mechanism],
        weights_bytes=weights,
        kv_reserve_bytes=per_gpu_reserve * gpu_count,
        resident_bytes=resident,
        offloaded_bytes=offloaded,
        step=step,
        resident_read_bytes=resident_read * gpu_count,
        kv_read_bytes=step.kv_bytes_per_gpu * gpu_count,
        link_bytes_per_step=crossing * gpu_count,
        hbm_s_per_step=hbm_s,
        kv_s_per_step=kv_s,
        link_s_per_step=link_s,
        s_per_step=step_s,
        tokens_per_s=1 / step_s if step_s else 0.0,
        batch_size=batch_size,
        batch_tokens_per_s=batch_size / step_s if step_s else 0.0,
        gpu_idle_fraction=link_s / step_s if step_s else 0.0,
        fully_resident=fully_resident(model, gpu, weight_format, kv_format, workload, batch_size),
        warnings=_moe_warning(model, step, offloaded, crossing * gpu_count, mechanism),
    )


def _moe_warning(
    model: ModelSpec, step: DecodeStep, offloaded: int, crossing: int, mechanism: str
) -> list[PlanWarning]:
    if not model.is_moe:
        return []
    share = routed_expert_params(model) / model.total_params
    moved = (
        "every offloaded byte crosses, whichever experts run"
        if mechanism == "copy"
        else "only the bytes of the experts it routes to (and the shared weights) cross"
    )
    return [
        PlanWarning(
            code=advice.MOE_OFFLOAD_EXPERTS,
            message=(
                f"Mixture of experts: a step of {step.batch_size:,} conversation(s) reads about "
                f"{step.experts_read_per_layer:,.2f} of {model.experts} experts per layer "
                f"({UNIFORM_ROUTING}). The offloaded bytes are assumed to hold routed experts in "
                f"the model's own proportion ({share:.1%} of its parameters); under {mechanism} "
                f"{moved}: {label_bytes(crossing)} of {label_bytes(offloaded)} per step."
            ),
        )
    ]


def fully_resident(
    model: ModelSpec,
    gpu: GpuSpec,
    weight_format: NumberFormat,
    kv_format: NumberFormat,
    workload: Workload,
    batch_size: int,
) -> FullyResident:
    """The fewest GPUs that hold the model for ``batch_size`` conversations, and its speed:
    /plan's decode ceiling for that batch, what a step reads per GPU / HBM bandwidth (the
    seed's four H100s read 35.3 GB slices in about 10.5 ms)."""
    batch = msgspec.structs.replace(workload, concurrency=batch_size)
    p = plan_if_splittable(model, gpu, weight_format, kv_format, batch)
    if p is None or not p.fits:
        return FullyResident(
            gpu_count=None, weights_bytes_per_gpu=None, s_per_step=None, tokens_per_s=None
        )
    return FullyResident(
        gpu_count=p.gpu_count,
        weights_bytes_per_gpu=p.per_gpu.weights_bytes,
        s_per_step=p.decode.s_per_step,
        tokens_per_s=1 / p.decode.s_per_step,
    )
