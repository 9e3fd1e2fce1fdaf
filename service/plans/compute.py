"""/matrix and /offload requests answered on resolved specs: the one path shared by the
controllers (specs from the database) and the CLI's local mode (specs from the shipped JSON)."""

import functools
from collections.abc import Mapping, Sequence
from typing import TypeVar

import msgspec

from service.schemas.compute import MatrixRequest, OffloadRequest
from service.sizing.cost import CostedCell, CostedMatrix, GpuPrice, cost_matrix
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.matrix import build_matrix
from service.sizing.models import ModelSpec
from service.sizing.offload import Offload, offload
from service.sizing.plan import Workload


def workload_of(request: msgspec.Struct) -> Workload:
    """The Workload a request describes: its fields of the same names, the rest defaulting
    (splits: each GPU's default ladder when the request names none; an empty list stays an
    error)."""
    fields = {
        name: value
        for name in _workload_fields(type(request))
        if (value := getattr(request, name)) is not None
    }
    if "splits" in fields:
        fields["splits"] = tuple(fields["splits"])
    return Workload(**fields)


@functools.cache
def _workload_fields(request_type: type[msgspec.Struct]) -> tuple[str, ...]:
    """The Workload fields a request type has by the same name (found once per type)."""
    return tuple(n for n in Workload.__struct_fields__ if n in request_type.__struct_fields__)


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
    ms, fs, gs = distinct(models), distinct(formats), distinct(gpus)
    if request.traffic is None:
        return cost_matrix(build_matrix(ms, fs, gs, workload, kv, cell_type=CostedCell), prices)
    # The serving model is imported only for traffic, so that the offline CLI's plain answers
    # start without it (issue 20: the CLI within 3x of importing msgspec).
    from service.plans.matrix_traffic import check_traffic_cells, with_traffic

    check_traffic_cells(len(ms), len(fs), len(gs))
    costed = cost_matrix(build_matrix(ms, fs, gs, workload, kv, cell_type=CostedCell), prices)
    return with_traffic(
        costed,
        request.traffic,
        ms,
        fs,
        gs,
        kv,
        prices,
        context_tokens=request.context_tokens,
        utilisation=request.gpu_memory_utilization,
    )


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
