"""What a traffic plan is: the traffic asked about (requests/s, lengths, latency limits) and
the answer (each replica layout's option, its cost, why it does or does not serve it).

The types alone, which the request and answer schemas are built from; how the plan is found
is ``traffic.py``, on the serving model (``curve``, ``loop``).
"""

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from service.sizing.serving.efficiency import Engine

Bottleneck = Literal[
    "compute", "hbm-bandwidth", "interconnect", "overhead", "kv-capacity", "max-num-seqs"
]
"""What bounds a replica's step (``loop.ServingPrediction.bottleneck``)."""
LimitedBy = Literal["utilisation", "ttft", "tpot"]
"""What caps a replica's load within the limits (``curve.replica_capacity``)."""
TrafficRankBy = Literal["hourly_cost", "gpus"]
ShortfallCode = Literal[
    "cannot_split", "does_not_start", "unsupported", "kv_capacity", "ttft", "tpot", "replicas"
]
Rate = Annotated[float, Meta(gt=0, le=1_000_000)]
Tokens = Annotated[int, Meta(ge=1, le=10_000_000)]
LimitSeconds = Annotated[float, Meta(ge=1e-6, le=86_400)]
"""A latency limit; inclusive at 1 us (the spec Litestar writes for an optional field drops an
exclusive minimum)."""


class Traffic(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """R requests/s of ``input_tokens`` prompts and ``output_tokens`` answers, within limits."""

    requests_per_s: Rate
    input_tokens: Tokens
    output_tokens: Tokens
    ttft_s: LimitSeconds | None = None
    """Mean time to first token at most this (null: no limit)."""
    tpot_s: LimitSeconds | None = None
    """Mean time per output token after the first at most this (null: no limit)."""
    max_utilisation: Annotated[float, Meta(ge=0.01, le=1)] = 0.9
    """The largest share of a replica's capacity to plan on: a margin for traffic burstier than
    the Poisson arrivals whose queueing the open-loop TTFT counts, and for the model's error."""
    engine: Engine = "vllm"
    rank_by: TrafficRankBy = "hourly_cost"
    """hourly_cost: the cheapest option (GPUs without an hourly price after the priced ones,
    fewest GPUs among them); gpus: the fewest GPUs, then the cheapest."""


class Shortfall(msgspec.Struct, frozen=True, kw_only=True):
    """Why an option does not serve the traffic, machine-readable and in words."""

    code: ShortfallCode
    field: str
    """The input it concerns (``traffic.tpot_s``, ``tensor_parallel``, ...)."""
    message: str
    """'TP1 on L40S: TPOT 71 ms > 50 ms at the lightest load'."""
    predicted_s: float | None = None
    limit_s: float | None = None


class TrafficCost(msgspec.Struct, frozen=True, kw_only=True):
    """Integer minor units of ``currency`` (cents), as the catalogue's prices."""

    currency: str
    hourly_price_cents: int
    """One GPU for one hour."""
    hourly_cost_cents: int
    """gpu_count x hourly_price_cents."""
    monthly_cost_cents: int
    """hourly_cost_cents x 730 hours."""
    cost_per_million_output_tokens_cents: int
    """hourly_cost_cents / (requests_per_s x output_tokens x 3,600 / 10^6), to the nearest
    cent: at the requested rate, not at capacity."""
    price_observed_on: str | None
    price_source: str


class TrafficOption(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    tensor_parallel: int
    pipeline_parallel: int
    gpus_per_replica: int
    feasible: bool
    replicas: int | None = None
    gpu_count: int | None = None
    """replicas x gpus_per_replica."""
    requests_per_s_per_replica: float | None = None
    """The load on each replica: requests_per_s / replicas."""
    max_requests_per_s_per_replica: float | None = None
    """The most one replica takes within the limits and max_utilisation."""
    capacity_requests_per_s_per_replica: float | None = None
    headroom: float | None = None
    """1 - load / max_requests_per_s_per_replica: the share of more traffic each replica could
    take within the limits."""
    utilisation: float | None = None
    """load / capacity."""
    limited_by: LimitedBy | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    running_batch: float | None = None
    bottleneck: Bottleneck | None = None
    output_tokens_per_s_per_gpu: float | None = None
    cost: TrafficCost | None = None
    """null: the GPU has no hourly price in the catalogue, or the option does not serve."""
    failures: list[Shortfall] = msgspec.field(default_factory=list)
    summary: str = ""


class TrafficPlan(msgspec.Struct, frozen=True, kw_only=True):
    traffic: Traffic
    feasible: bool
    """False: no option meets the limits (each option's ``failures`` say why)."""
    chosen: TrafficOption | None
    why_not_cheaper: list[str]
    """Each option ranked before the chosen one (every option when none serves), and why."""
    options: list[TrafficOption]
    ranking_rule: str
    unpriced_gpus: list[str] = msgspec.field(default_factory=list)
    """GPUs of feasible options without an hourly price: their cost is unknown."""
    skipped: list[str] = msgspec.field(default_factory=list)
    """Layouts not evaluated: one replica of each already ranks after the chosen option, so no
    replica count of it can be cheaper ('TP8 on H100 SXM 80GB')."""
    summary: str = ""


def duration_text(seconds: float) -> str:
    """71 ms, 7.4 ms, 1.25 s."""
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"
