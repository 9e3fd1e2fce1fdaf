"""One replica's open loop as a curve over its running batch, and the most it takes within
TTFT and TPOT limits.

The open loop (``loop.open_loop``) at R requests/s runs the batch b with
R = b / (output x TPOT(b)); its TPOT is a steady step of b sequences and its TTFT one prompt's
chunked prefill beside them, half a step and the queues' waits (``loop.open_loop_ttft_s``).
Read the other way, every batch b up to the engine's limit gives one point: its rate, TPOT and
TTFT, each growing with b. Searching over b needs no fixed point per rate, which keeps a traffic
plan over every GPU and tensor-parallel size near the time of one /plan
(tests/unit/sizing/serving/test_curve.py checks that each point is what ``open_loop`` answers at
its rate).
"""

import math
from collections.abc import Callable
from typing import NamedTuple

import msgspec

from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.loop import (
    EngineLimits,
    ServingPrediction,
    Workload,
    batch_limit,
    open_loop_ttft_s,
    steady_step,
)
from service.sizing.serving.step import StepCosts
from service.sizing.serving.traffic_plan import LimitedBy

LIGHTEST_LOAD = 1e-6
"""The lightest load tried, as a share of the largest batch: what one request at a time sees
(a replica that misses a limit there misses it at any rate)."""
TOLERANCE = 1e-7
"""The searches stop when the bracket is this share of the batch wide (or the ratio this
close to its limit)."""
STEPS = 80


class Curve(NamedTuple):
    max_batch: float
    """The largest running batch (max_num_seqs, the KV pool, the token budget)."""
    at: Callable[[float], ServingPrediction]
    """The open loop's state at a running batch; its requests_per_s is the arrival rate."""
    rate: Callable[[float], float] | None = None
    """The arrival rate alone at a running batch, where cheaper (None: ``at``'s)."""

    def rate_at(self, batch: float) -> float:
        return self.rate(batch) if self.rate is not None else self.at(batch).requests_per_s


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    ttft_s: float | None = None
    tpot_s: float | None = None
    max_utilisation: float = 0.9


class ReplicaCapacity(msgspec.Struct, frozen=True, kw_only=True):
    capacity_requests_per_s: float
    """What a saturated replica completes."""
    max_requests_per_s: float
    """The most it takes within the limits and max_utilisation (0: none)."""
    batch: float
    """The running batch at that rate."""
    limited_by: LimitedBy | None
    """None: no rate meets the limits (``lightest`` says how far off it is)."""
    lightest: ServingPrediction
    """The state at the lightest load."""


def open_loop_curve(
    costs: StepCosts,
    eff: Efficiency,
    limits: EngineLimits,
    input_tokens: float,
    output_tokens: float,
) -> Curve:
    """The curve of ``loop``'s open loop for a replica (a SizingError naming
    ``kv_pool_tokens`` when the pool cannot hold one request)."""
    w = Workload(input_tokens=input_tokens, output_tokens=output_tokens, request_rate_per_s=1.0)
    cap, _ = batch_limit(limits, w)
    gpus = costs.tensor_parallel * costs.pipeline_parallel
    full = steady_step(costs, eff, limits, w, cap)
    capacity = cap / full.total_s / output_tokens

    def at(batch: float) -> ServingPrediction:
        step = steady_step(costs, eff, limits, w, batch)
        out = batch / step.total_s
        rate = out / output_tokens
        total = rate * (input_tokens + output_tokens)
        return ServingPrediction(
            ttft_s=open_loop_ttft_s(costs, eff, limits, w, batch, cap, step),
            tpot_s=step.total_s,
            itl_s=step.total_s,
            output_tokens_per_s=out,
            total_tokens_per_s=total,
            requests_per_s=rate,
            output_tokens_per_s_per_gpu=out / gpus,
            total_tokens_per_s_per_gpu=total / gpus,
            running_batch=batch,
            bottleneck=step.bound,
            gpus=gpus,
            utilisation=rate / capacity,
        )

    def rate(batch: float) -> float:
        return batch / steady_step(costs, eff, limits, w, batch).total_s / output_tokens

    return Curve(max_batch=cap, at=at, rate=rate)


def _ratios(p: ServingPrediction, limits: Limits, capacity: float) -> dict[LimitedBy, float]:
    ratios: dict[LimitedBy, float] = {
        "utilisation": p.requests_per_s / (capacity * limits.max_utilisation)
    }
    if limits.ttft_s is not None:
        ratios["ttft"] = math.inf if p.ttft_s is None else p.ttft_s / limits.ttft_s
    if limits.tpot_s is not None:
        ratios["tpot"] = p.tpot_s / limits.tpot_s
    return ratios


def largest(
    f: Callable[[float], float],
    lo: float,
    f_lo: float,
    hi: float,
    f_hi: float,
    tolerance: float = TOLERANCE,
) -> float:
    """The largest x in [lo, hi] with f(x) <= 0, for f increasing, f(lo) <= 0 < f(hi), to
    within ``tolerance`` (of x, or of f: a ratio less one): secant steps through the last two
    points, kept inside the bracket, and a bisection when three steps have not halved it (a
    jump, one prompt chunk more, or a kink where another limit takes over)."""
    x0, f0, x1, f1 = lo, f_lo, hi, f_hi
    stalls, width = 0, hi - lo
    for _ in range(STEPS):
        if hi - lo <= tolerance * hi:
            break
        x = (lo + hi) / 2
        if stalls < 3 and math.isfinite(f1) and math.isfinite(f0) and f1 != f0:
            secant = x1 - f1 * (x1 - x0) / (f1 - f0)
            if lo < secant < hi:
                x = secant
        fx = f(x)
        if abs(fx) < tolerance:
            return x
        if fx <= 0:
            lo, f_lo = x, fx
        else:
            hi, f_hi = x, fx
        x0, f0, x1, f1 = x1, f1, x, fx
        if hi - lo <= width / 2:
            stalls, width = 0, hi - lo
        else:
            stalls += 1
    return lo


def replica_capacity(curve: Curve, limits: Limits) -> ReplicaCapacity:
    """The most requests/s one replica takes within ``limits``: the largest batch whose TTFT,
    TPOT and rate / (capacity x max_utilisation) are all within bounds."""
    top = curve.at(curve.max_batch)
    capacity = top.requests_per_s
    lo = curve.max_batch * LIGHTEST_LOAD
    lightest = curve.at(lo)
    f_lo = max(_ratios(lightest, limits, capacity).values()) - 1
    if f_lo > 0:
        return ReplicaCapacity(
            capacity_requests_per_s=capacity,
            max_requests_per_s=0.0,
            batch=0.0,
            limited_by=None,
            lightest=lightest,
        )
    # At the largest batch the rate is the capacity: past max_utilisation (or at 1, unstable).
    f_hi = max(max(_ratios(top, limits, capacity).values()) - 1, 1e-12)

    def excess(b: float) -> float:
        return max(_ratios(curve.at(b), limits, capacity).values()) - 1

    batch = largest(excess, lo, f_lo, curve.max_batch, f_hi)
    hi = min(curve.max_batch, batch * (1 + 4 * TOLERANCE))
    binding = _ratios(curve.at(hi), limits, capacity)
    return ReplicaCapacity(
        capacity_requests_per_s=capacity,
        max_requests_per_s=curve.rate_at(batch),
        batch=batch,
        limited_by=max(binding.items(), key=lambda kv: kv[1])[0],
        lightest=lightest,
    )


def at_rate(curve: Curve, rate: float, below: float) -> ServingPrediction:
    """The state at ``rate``, on a batch at most ``below`` (a batch whose rate is at least
    ``rate``)."""
    lo = below * LIGHTEST_LOAD
    f_lo = curve.rate_at(lo) / rate - 1
    if f_lo >= 0:
        return curve.at(lo)
    f_hi = curve.rate_at(below) / rate - 1
    if f_hi <= 0:
        return curve.at(below)
    found = largest(lambda b: curve.rate_at(b) / rate - 1, lo, f_lo, below, f_hi, 1e-8)
    return curve.at(found)
