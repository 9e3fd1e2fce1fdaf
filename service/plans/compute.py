"""/matrix and /offload requests answered on resolved specs: the one path shared by the
controllers (specs from the database) and the CLI's local mode (specs from the shipped JSON)."""

from collections.abc import Mapping, Sequence
from typing import Annotated

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
from service.sizing.cost import CostedMatrix, GpuPrice, cost_matrix
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS, CapacityBasis, GpuSpec, LinkSpec
from service.sizing.matrix import build_matrix
from service.sizing.models import ModelSpec
from service.sizing.offload import Offload, OffloadMechanism, offload
from service.sizing.plan import Workload

DEFAULT_MATRIX_FORMATS = ("bf16", "fp8", "int4")
"""The seeds' matrix rows: 16-bit, 8-bit and the 4.5-bit rule of thumb."""


class MatrixRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Rows: models x weight formats; columns: GPUs. Empty lists mean the whole catalogue
    (formats: bf16, fp8 and the seeds' 4-bit)."""

    # Items are slugs checked by the catalogue lookup (unknown: 404 naming the list).
    models: Annotated[list[str], Meta(max_length=64)] = []
    formats: Annotated[list[str], Meta(max_length=16)] = []
    gpus: Annotated[list[str], Meta(max_length=64)] = []
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
    resident_bytes: int | None = None
    """Checked by the core (0 to the weights' size, 422 naming it): the spec cannot carry the
    bounds of a nullable number."""
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


def answer_matrix(
    request: MatrixRequest,
    models: Sequence[ModelSpec],
    formats: Sequence[NumberFormat],
    gpus: Sequence[GpuSpec],
    kv: NumberFormat | None,
    prices: Mapping[str, GpuPrice],
) -> CostedMatrix:
    kv = kv and check_kv_format(kv)
    return cost_matrix(build_matrix(models, formats, gpus, workload_of(request), kv), prices)


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
