"""Planning from traffic: the fewest GPUs (at the lowest cost) that serve R requests/s of a
given prompt and answer length within TTFT and TPOT limits.

Each candidate is one replica layout (a GPU, a tensor- and pipeline-parallel size) the engine
starts on. Its curve (``curve.open_loop_curve`` by default) gives one replica's open loop at
each running batch; the most a replica takes within the limits and max_utilisation is the
largest batch that meets them (``curve.replica_capacity``). Then replicas = ceil(R / that
most), the load per replica is R / replicas and the headroom 1 - load / most. The options are
ranked by hourly cost (GPUs without a price after the priced ones) or by GPU count; the chosen
one is the first that serves the traffic, and every option ranked before it says why it does
not (a replica that misses a limit at the lightest load misses it at any replica count).
"""

import math
from collections.abc import Callable, Sequence

import msgspec

from service.sizing.cost import GpuPrice
from service.sizing.errors import SizingError, require
from service.sizing.serving.curve import (
    Curve,
    Limits,
    at_rate,
    open_loop_curve,
    replica_capacity,
)
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.loop import EngineLimits, ServingPrediction
from service.sizing.serving.step import StepCosts
from service.sizing.serving.traffic_plan import (
    Shortfall,
    ShortfallCode,
    Traffic,
    TrafficCost,
    TrafficOption,
    TrafficPlan,
    TrafficRankBy,
    duration_text,
)
from service.sizing.workload import MAX_GPU_COUNT

HOURS_PER_MONTH = 730
"""8,760 hours a year / 12."""


class NotServable(Exception):
    """Raised by a curve_for that finds the candidate cannot run (the engine does not start)."""

    def __init__(self, shortfall: "Shortfall") -> None:
        super().__init__(shortfall.message)
        self.shortfall = shortfall


class ReplicaModel(msgspec.Struct, frozen=True, kw_only=True):
    """What the serving model needs of one replica (``deploy.step_costs``, ``engine_limits``,
    ``efficiency_for``)."""

    costs: StepCosts
    efficiency: Efficiency
    limits: EngineLimits


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One replica layout: runnable (``failure`` None) or why not."""

    gpu: str
    gpu_name: str = ""
    tensor_parallel: int
    pipeline_parallel: int = 1
    replica: ReplicaModel | None = None
    failure: Shortfall | None = None
    price: GpuPrice | None = None

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def label(self) -> str:
        pp = f" x PP{self.pipeline_parallel}" if self.pipeline_parallel > 1 else ""
        return f"TP{self.tensor_parallel}{pp} on {self.gpu_name or self.gpu}"


CurveFor = Callable[[Candidate, "Traffic"], Curve]
"""A candidate's replica as a curve over its running batch."""


def open_loop_for(c: Candidate, t: Traffic) -> Curve:
    """The serving model's open loop on the candidate's replica."""
    r = c.replica
    if r is None:
        raise NotServable(
            Shortfall(code="unsupported", field="traffic", message=f"{c.label}: no replica model")
        )
    return open_loop_curve(r.costs, r.efficiency, r.limits, t.input_tokens, t.output_tokens)


def validate_traffic(t: Traffic, field: str = "traffic") -> Traffic:
    require(t.requests_per_s > 0, f"{field}.requests_per_s", "must be positive")
    require(t.input_tokens >= 1, f"{field}.input_tokens", "must be at least 1")
    require(t.output_tokens >= 1, f"{field}.output_tokens", "must be at least 1")
    for name in ("ttft_s", "tpot_s"):
        limit = getattr(t, name)
        require(limit is None or limit > 0, f"{field}.{name}", "must be positive")
    require(0 < t.max_utilisation <= 1, f"{field}.max_utilisation", "must be in (0, 1]")
    return t


def missed(p: ServingPrediction, t: Traffic, label: str) -> list[Shortfall]:
    """The limits ``p`` (the lightest load) misses, each in words and figures."""
    out = []
    where = " at the lightest load"
    if t.ttft_s is not None and (p.ttft_s is None or p.ttft_s > t.ttft_s):
        shown = "unbounded" if p.ttft_s is None else duration_text(p.ttft_s)
        out.append(
            Shortfall(
                code="ttft",
                field="traffic.ttft_s",
                message=f"{label}: TTFT {shown} > {duration_text(t.ttft_s)}{where}",
                predicted_s=p.ttft_s,
                limit_s=t.ttft_s,
            )
        )
    if t.tpot_s is not None and p.tpot_s > t.tpot_s:
        out.append(
            Shortfall(
                code="tpot",
                field="traffic.tpot_s",
                message=f"{label}: TPOT {duration_text(p.tpot_s)} > "
                f"{duration_text(t.tpot_s)}{where}",
                predicted_s=p.tpot_s,
                limit_s=t.tpot_s,
            )
        )
    return out


def traffic_cost(gpu_count: int, price: GpuPrice | None, t: Traffic) -> TrafficCost | None:
    """``gpu_count`` GPUs at the hourly price; None without one."""
    if price is None or price.currency is None or price.hourly_price_cents is None:
        return None
    hourly = gpu_count * price.hourly_price_cents
    million_tokens_per_hour = t.requests_per_s * t.output_tokens * 3600 / 1e6
    return TrafficCost(
        currency=price.currency,
        hourly_price_cents=price.hourly_price_cents,
        hourly_cost_cents=hourly,
        monthly_cost_cents=hourly * HOURS_PER_MONTH,
        cost_per_million_output_tokens_cents=math.floor(hourly / million_tokens_per_hour + 0.5),
        price_observed_on=price.price_observed_on,
        price_source=price.price_source,
    )


def _failed(c: Candidate, failures: list[Shortfall], **figures: float | None) -> TrafficOption:
    return TrafficOption(
        gpu=c.gpu,
        tensor_parallel=c.tensor_parallel,
        pipeline_parallel=c.pipeline_parallel,
        gpus_per_replica=c.gpus_per_replica,
        feasible=False,
        failures=failures,
        summary="; ".join(f.message for f in failures),
        **figures,  # type: ignore[arg-type]
    )


def plan_option(c: Candidate, t: Traffic, curve_for: CurveFor = open_loop_for) -> TrafficOption:
    """How many replicas of ``c`` serve ``t``, or why none do."""
    if c.failure is not None:
        return _failed(c, [c.failure])
    try:
        curve = curve_for(c, t)
        limits = Limits(ttft_s=t.ttft_s, tpot_s=t.tpot_s, max_utilisation=t.max_utilisation)
        cap = replica_capacity(curve, limits)
    except NotServable as exc:
        return _failed(c, [exc.shortfall])
    except SizingError as exc:  # e.g. the KV pool cannot hold one request of this length
        code: ShortfallCode = "kv_capacity" if exc.field == "kv_pool_tokens" else "unsupported"
        return _failed(c, [Shortfall(code=code, field=exc.field, message=f"{c.label}: {exc}")])
    if cap.limited_by is None:
        shortfalls = missed(cap.lightest, t, c.label)
        return _failed(
            c, shortfalls, capacity_requests_per_s_per_replica=cap.capacity_requests_per_s
        )
    # The search ends within a part in 10^7 below the most: an exact multiple needs no extra
    # replica (the load may then pass the found most by that much, within the search's error).
    replicas = max(1, math.ceil(t.requests_per_s / cap.max_requests_per_s - 1e-5))
    gpus = replicas * c.gpus_per_replica
    if gpus > MAX_GPU_COUNT:
        return _failed(
            c,
            [
                Shortfall(
                    code="replicas",
                    field="traffic.requests_per_s",
                    message=f"{c.label}: {replicas:,} replicas ({gpus:,} GPUs) is more than "
                    f"{MAX_GPU_COUNT:,} GPUs",
                )
            ],
            max_requests_per_s_per_replica=cap.max_requests_per_s,
            capacity_requests_per_s_per_replica=cap.capacity_requests_per_s,
        )
    load = t.requests_per_s / replicas
    most = max(cap.max_requests_per_s, load)
    p = at_rate(curve, load, cap.batch)
    cost = traffic_cost(gpus, c.price, t)
    price = "" if cost is None else f", {cost.hourly_cost_cents / 100:,.2f} {cost.currency}/h"
    return TrafficOption(
        gpu=c.gpu,
        tensor_parallel=c.tensor_parallel,
        pipeline_parallel=c.pipeline_parallel,
        gpus_per_replica=c.gpus_per_replica,
        feasible=True,
        replicas=replicas,
        gpu_count=gpus,
        requests_per_s_per_replica=load,
        max_requests_per_s_per_replica=most,
        capacity_requests_per_s_per_replica=cap.capacity_requests_per_s,
        headroom=1 - load / most,
        utilisation=load / cap.capacity_requests_per_s,
        limited_by=cap.limited_by,
        ttft_s=p.ttft_s,
        tpot_s=p.tpot_s,
        running_batch=p.running_batch,
        bottleneck=p.bottleneck,
        output_tokens_per_s_per_gpu=p.output_tokens_per_s_per_gpu,
        cost=cost,
        summary=f"{replicas} x {c.label}: {gpus} GPUs, {load:,.2f} requests/s each "
        f"(TTFT {duration_text(p.ttft_s or 0)}, TPOT {duration_text(p.tpot_s)}){price}",
    )


RankKey = tuple[int, float, float, int, int, str]


def _key(gpus: int, feasible: bool, c: Candidate, rank_by: TrafficRankBy) -> RankKey:
    price = c.price
    hourly = (
        gpus * price.hourly_price_cents
        if price is not None and price.currency and price.hourly_price_cents is not None
        else None
    )
    tail = (0 if feasible else 1, c.tensor_parallel, c.gpu)
    if rank_by == "gpus":
        return (0, float(gpus), math.inf if hourly is None else float(hourly), *tail)
    if hourly is None:
        return (1, float(gpus), 0.0, *tail)
    return (0, float(hourly), float(gpus), *tail)


def _rank_key(o: TrafficOption, c: Candidate, rank_by: TrafficRankBy) -> RankKey:
    """A feasible option by its total; one that fails by one replica (what it would cost at
    the least), so each option ranked before the chosen one is cheaper and fails."""
    gpus = o.gpu_count if o.gpu_count is not None else o.gpus_per_replica
    return _key(gpus, o.feasible, c, rank_by)


def _floor_key(c: Candidate, rank_by: TrafficRankBy) -> RankKey:
    """The best key any option of ``c`` can reach: one replica that serves."""
    return _key(c.gpus_per_replica, True, c, rank_by)


RANKING_RULES: dict[TrafficRankBy, str] = {
    "hourly_cost": "the lowest hourly cost first (GPUs without an hourly price after the priced "
    "ones, by GPU count), then the fewest GPUs; an option that fails ranks by one replica's cost",
    "gpus": "the fewest GPUs first, then the lowest hourly cost; an option that fails ranks by "
    "one replica's GPUs",
}


def plan_traffic(
    candidates: Sequence[Candidate],
    t: Traffic,
    curve_for: CurveFor = open_loop_for,
) -> TrafficPlan:
    """Every candidate's option, ranked; the first that serves ``t`` is chosen."""
    validate_traffic(t)
    require(bool(candidates), "traffic", "no GPU and tensor-parallel size to try")
    rank_by = t.rank_by
    currencies = {c.price.currency for c in candidates if c.price and c.price.currency}
    rule = RANKING_RULES[rank_by]
    if len(currencies) > 1 and rank_by == "hourly_cost":
        rank_by = "gpus"
        rule = (
            f"the GPUs are priced in several currencies ({', '.join(sorted(currencies))}): "
            + RANKING_RULES["gpus"]
        )
    # Cheapest replica first: once one replica of a candidate ranks after the best option
    # found, no count of it can win, and it is not evaluated (``skipped``).
    scored: list[tuple[TrafficOption, Candidate]] = []
    skipped: list[str] = []
    best: RankKey | None = None
    for c in sorted(candidates, key=lambda c: _floor_key(c, rank_by)):
        if c.failure is None and best is not None and _floor_key(c, rank_by) > best:
            skipped.append(c.label)
            continue
        o = plan_option(c, t, curve_for)
        scored.append((o, c))
        if o.feasible:
            key = _rank_key(o, c, rank_by)
            best = key if best is None else min(best, key)
    scored.sort(key=lambda oc: _rank_key(oc[0], oc[1], rank_by))
    options = [o for o, _ in scored]
    chosen_at = next((i for i, o in enumerate(options) if o.feasible), None)
    chosen = None if chosen_at is None else options[chosen_at]
    before = options if chosen_at is None else options[:chosen_at]
    unpriced = sorted({o.gpu for o in options if o.feasible and o.cost is None})
    if chosen is None:
        summary = (
            f"No option serves {t.requests_per_s:,g} requests/s"
            f"{_limits_text(t)}: each option says why"
        )
    else:
        summary = chosen.summary
    return TrafficPlan(
        traffic=t,
        feasible=chosen is not None,
        chosen=chosen,
        why_not_cheaper=[o.summary for o in before],
        options=options,
        ranking_rule=rule,
        unpriced_gpus=unpriced,
        skipped=skipped,
        summary=summary,
    )


def _limits_text(t: Traffic) -> str:
    parts = []
    if t.ttft_s is not None:
        parts.append(f"TTFT <= {duration_text(t.ttft_s)}")
    if t.tpot_s is not None:
        parts.append(f"TPOT <= {duration_text(t.tpot_s)}")
    return f" within {' and '.join(parts)}" if parts else ""
