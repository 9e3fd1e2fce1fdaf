"""/matrix and /offload requests answered on resolved specs: the one path shared by the
controllers (specs from the database) and the CLI's local mode (specs from the shipped JSON)."""

from collections.abc import Mapping, Sequence
from typing import Annotated, TypeVar

import msgspec
from msgspec import Meta

from service.plans.bounds import (
    SEED_OVERHEAD_BYTES,
    ContextTokens,
    OverheadBytes,
    SlugRef,
    Splits,
    Users,
    Utilisation,
)
from service.sizing.cost import CostedCell, CostedMatrix, GpuPrice, cost_matrix
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS, CapacityBasis, GpuSpec, LinkSpec
from service.sizing.matrix import build_matrix
from service.sizing.models import ModelSpec
from service.sizing.offload import Offload, OffloadMechanism, offload
from service.sizing.plan import Workload

DEFAULT_MATRIX_FORMATS = ("bf16", "fp8", "int4")
"""The seeds' matrix rows: 16-bit, 8-bit and the 4.5-bit rule of thumb."""
MAX_MATRIX_MODELS, MAX_MATRIX_FORMATS, MAX_MATRIX_GPUS = 64, 16, 64
"""Names a matrix request may list (before de-duplication); the cells are bounded apart."""


class MatrixRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Rows: models x weight formats; columns: GPUs. Empty lists mean the whole catalogue
    (formats: bf16, fp8 and the seeds' 4-bit). Repeated names count once (first-seen order);
    at most MAX_MATRIX_CELLS models x formats x GPUs (a 422 naming the longest list)."""

    # Items are slugs checked by the catalogue lookup (unknown: 404 naming the list).
    models: Annotated[list[SlugRef], Meta(max_length=MAX_MATRIX_MODELS)] = []
    formats: Annotated[list[SlugRef], Meta(max_length=MAX_MATRIX_FORMATS)] = []
    gpus: Annotated[list[SlugRef], Meta(max_length=MAX_MATRIX_GPUS)] = []
    kv_format: SlugRef | None = None
    concurrency: Users = 8
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    splits: Splits | None = None
    """GPU counts to try; default each GPU's ladder: 1, 2, 4, 8 inside a node (up to its
    gpus_per_node), then 2 and 4 whole nodes as pipeline stages (16, 32 for 8 per node)."""
    capacity_basis: CapacityBasis = DEFAULT_CAPACITY_BASIS


class OffloadRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    model: SlugRef
    gpu: SlugRef
    gpu_count: Annotated[int, Meta(ge=1, le=1024)] = 1
    weight_format: SlugRef = "bf16"
    kv_format: SlugRef | None = None
    resident_bytes: Annotated[int, Meta(ge=0, le=2**53)] | None = None
    """At most the weights' size (checked by the core, a 422 naming it)."""
    link: SlugRef | None = None
    batch_size: Annotated[int, Meta(ge=1, le=100_000)] = 1
    context_tokens: ContextTokens = 8192
    gpu_memory_utilization: Utilisation = 0.9
    overhead_bytes_per_gpu: OverheadBytes = SEED_OVERHEAD_BYTES
    capacity_basis: CapacityBasis = DEFAULT_CAPACITY_BASIS
    mechanism: OffloadMechanism = "uva"
    """How the engine reaches offloaded weights: ``uva`` (vLLM V1 from 0.8.4: kernels read them
    in place, only the bytes a step touches cross) or ``copy`` (vLLM V0, or UVA disabled: each
    offloaded layer is copied to the GPU before it runs, every offloaded byte every step)."""


def workload_of(request: object) -> Workload:
    """The Workload a request describes: its fields of the same names, the rest defaulting
    (splits: each GPU's default ladder when the request names none; an empty list stays an
    error)."""
    fields = {
        name: getattr(request, name)
        for name in Workload.__struct_fields__
        if getattr(request, name, None) is not None
    }
    if "splits" in fields:
        fields["splits"] = tuple(fields["splits"])
    return Workload(**fields)


def check_kv_format(kv: NumberFormat) -> NumberFormat:
    require(kv.kv_capable, "kv_format", f"{kv.slug} cannot hold a KV cache")
    return kv


S = TypeVar("S", ModelSpec, NumberFormat, GpuSpec)


def distinct(specs: Sequence[S]) -> list[S]:
    """Each spec once, in first-seen order (two aliases of one GPU are one column)."""
    seen: dict[str, S] = {}
    for spec in specs:
        seen.setdefault(spec.slug, spec)
    return list(seen.values())


def answer_matrix(
    request: MatrixRequest,
    models: Sequence[ModelSpec],
    formats: Sequence[NumberFormat],
    gpus: Sequence[GpuSpec],
    kv: NumberFormat | None,
    prices: Mapping[str, GpuPrice],
) -> CostedMatrix:
    """The matrix of the distinct models, formats, GPUs and splits (the core bounds its cells)."""
    kv = kv and check_kv_format(kv)
    workload = workload_of(request)
    if workload.splits is not None:
        workload = msgspec.structs.replace(workload, splits=tuple(dict.fromkeys(workload.splits)))
    matrix = build_matrix(
        distinct(models), distinct(formats), distinct(gpus), workload, kv, cell_type=CostedCell
    )
    return cost_matrix(matrix, prices)


def answer_offload(
    request: OffloadRequest,
    model: ModelSpec,
    gpu: GpuSpec,
    weights: NumberFormat,
    kv: NumberFormat,
    link: LinkSpec | None,
) -> Offload:
    """``link``: the named one, or None for the GPU's host link."""
    link = link or gpu.host_link
    if link is None:
        raise SizingError("link", f"{gpu.slug} has no host link in the catalogue: name one")
    return offload(
        model,
        gpu,
        weights,
        kv,
        link,
        workload_of(request),
        gpu_count=request.gpu_count,
        batch_size=request.batch_size,
        resident_bytes=request.resident_bytes,
        mechanism=request.mechanism,
    )
