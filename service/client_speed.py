"""The client's own Structs for POST /speed (service/client.py imports only httpx, msgspec and
this): plain msgspec Structs of the answer's fields, decoded leniently (a field the service adds
later is ignored)."""

from typing import Literal

import msgspec


class SpeedPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the sweep: per replica unless the name says per GPU; seconds, tokens/s."""

    concurrency: int | None
    request_rate_per_s: float | None
    ttft_s: float | None
    tpot_s: float
    itl_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    total_tokens_per_s: float
    total_tokens_per_s_per_gpu: float
    requests_per_s: float
    requests_per_s_per_gpu: float
    running_batch: float
    bottleneck: str
    stable: bool
    utilisation: float | None = None


class ServingFactors(msgspec.Struct, frozen=True, kw_only=True):
    flops_fraction: float
    bandwidth_fraction: float
    step_overhead_s: float
    allreduce_latency_s: float
    layer_overhead_s: float = 0.0


class SpeedReport(msgspec.Struct, frozen=True, kw_only=True):
    """What POST /speed answers."""

    model: str
    gpu: str
    engine: str
    engine_version: str
    weight_format: str
    kv_format: str
    tensor_parallel: int
    pipeline_parallel: int
    gpus_per_replica: int
    input_tokens: int
    output_tokens: int
    loop: Literal["closed", "open"]
    max_model_len: int
    kv_cache_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    efficiency: ServingFactors
    rows: list[SpeedPoint]
    notes: list[str] = []


class TrafficCost(msgspec.Struct, frozen=True, kw_only=True):
    """Integer cents of ``currency``."""

    currency: str
    hourly_price_cents: int
    hourly_cost_cents: int
    monthly_cost_cents: int
    cost_per_million_output_tokens_cents: int


class TrafficCellReport(msgspec.Struct, frozen=True, kw_only=True):
    """A matrix cell's GPUs for the traffic: replicas x tensor parallel, or why none serves."""

    feasible: bool
    replicas: int | None = None
    tensor_parallel: int | None = None
    gpu_count: int | None = None
    requests_per_s_per_replica: float | None = None
    headroom: float | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    cost: TrafficCost | None = None
    summary: str = ""


class TrafficMatrixCellReport(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    gpu_count: int | None
    tensor_parallel: int | None
    status: str
    traffic: TrafficCellReport | None = None


class TrafficMatrixRowReport(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    weight_format: str
    kv_format: str
    cells: list[TrafficMatrixCellReport]


class TrafficMatrixReport(msgspec.Struct, frozen=True, kw_only=True):
    """What POST /matrix answers with ``traffic``: each cell's memory plan and traffic plan."""

    gpus: list[str]
    rows: list[TrafficMatrixRowReport]
