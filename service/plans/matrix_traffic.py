"""The ``traffic`` of /matrix: each cell's GPUs, replicas and cost for the traffic (the
traffic plan of that model, format and GPU at tensor parallel 1, 2, 4, 8 up to one node)."""

from collections.abc import Mapping, Sequence

import msgspec

from service.plans.serving import check_length, traffic_plan
from service.schemas.compute import TrafficCell, TrafficMatrix, TrafficMatrixCell, TrafficMatrixRow
from service.sizing.cost import CostedMatrix, GpuPrice
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.serving.traffic import validate_traffic
from service.sizing.serving.traffic_plan import Traffic
from service.sizing.vllm.options import VllmOptions

MAX_TRAFFIC_CELLS = 1024
"""The most matrix cells planned for traffic: the shipped catalogue in the default three formats
(17 x 3 x 11 = 561) fits; each cell predicts every tensor-parallel size of a node."""


def check_traffic_cells(models: int, formats: int, gpus: int) -> None:
    """At most MAX_TRAFFIC_CELLS cells with traffic; more is an error naming the longest list."""
    cells = models * formats * gpus
    longest = max((models, "models"), (formats, "formats"), (gpus, "gpus"))
    require(
        cells <= MAX_TRAFFIC_CELLS,
        longest[1],
        f"{cells:,} cells with traffic; a matrix plans at most {MAX_TRAFFIC_CELLS:,} for traffic "
        f"(name fewer {longest[1]})",
    )


def traffic_cell(
    traffic: Traffic,
    model: ModelSpec,
    gpu: GpuSpec,
    weights: NumberFormat,
    kv: NumberFormat,
    prices: Mapping[str, GpuPrice],
    context_tokens: int,
    utilisation: float,
) -> TrafficCell:
    try:
        plan = traffic_plan(
            traffic,
            model,
            [gpu],
            weights,
            kv,
            prices,
            options=VllmOptions(),
            context_tokens=context_tokens,
            utilisation=utilisation,
        )
    except SizingError as exc:  # a format the vLLM method does not load
        return TrafficCell(feasible=False, summary=f"{exc.field}: {exc.message}")
    o = plan.chosen
    if o is None:
        return TrafficCell(feasible=False, summary="; ".join(plan.why_not_cheaper))
    return TrafficCell(
        feasible=True,
        replicas=o.replicas,
        tensor_parallel=o.tensor_parallel,
        gpu_count=o.gpu_count,
        requests_per_s_per_replica=o.requests_per_s_per_replica,
        headroom=o.headroom,
        ttft_s=o.ttft_s,
        tpot_s=o.tpot_s,
        cost=o.cost,
        summary=o.summary,
    )


def with_traffic(
    m: CostedMatrix,
    traffic: Traffic,
    models: Sequence[ModelSpec],
    formats: Sequence[NumberFormat],
    gpus: Sequence[GpuSpec],
    kv: NumberFormat | None,
    prices: Mapping[str, GpuPrice],
    *,
    context_tokens: int,
    utilisation: float,
) -> TrafficMatrix:
    """``m`` (of these distinct models, formats and GPUs, in order) with each cell's traffic."""
    validate_traffic(traffic)
    check_length(
        traffic.input_tokens, traffic.output_tokens, context_tokens, "traffic.output_tokens"
    )
    check_traffic_cells(len(models), len(formats), len(gpus))
    specs = [(model, fmt) for model in models for fmt in formats]
    rows = []
    for row, (model, fmt) in zip(m.rows, specs, strict=True):
        row_kv = kv or default_kv_format(fmt)
        rows.append(
            TrafficMatrixRow(
                **{
                    **msgspec.structs.asdict(row),
                    "cells": [
                        TrafficMatrixCell(
                            **msgspec.structs.asdict(cell),
                            traffic=traffic_cell(
                                traffic,
                                model,
                                gpu,
                                fmt,
                                row_kv,
                                prices,
                                context_tokens,
                                utilisation,
                            ),
                        )
                        for cell, gpu in zip(row.cells, gpus, strict=True)
                    ],
                }
            )
        )
    return TrafficMatrix(gpus=m.gpus, workload=m.workload, rows=rows, traffic=traffic)
