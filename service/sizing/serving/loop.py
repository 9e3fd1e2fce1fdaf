"""Step times -> what a client of ``vllm bench serve`` measures.

Closed loop of N clients (``--max-concurrency N``): the running batch is
b = min(N, max_num_seqs, KV pool tokens / (input + output / 2), the batched-token budget), a
request holding input + output / 2 tokens of the pool on average over its life. At steady state
each step decodes one token for each of the b sequences and prefills, chunked into the same step,
the prompts of the requests that replace the finished ones (b x input / output prompt tokens per
step on average), so TPOT is that step's time and output tokens/s is b / TPOT. Clients beyond
b queue; TTFT is that wait plus the prompt's chunked prefill.

A benchmark of P prompts (``--num-prompts P``; no concurrency cap sends all at once) is not a
steady state: the first wave's prefill, the queue behind the KV pool and the drain as the
longest answers finish decide its figures. ``benchmark`` runs it through ``simulate``, a
step-by-step simulation of the engine's scheduler and the benchmark client.

Open loop at R requests/s: the batch is the b with R = b / (output x TPOT(b)) (a small
fixed-point iteration); at or past the closed loop's capacity the queue grows without bound.
TTFT is the prompt's chunked prefill, half a step for the step in progress, and the waits of
Poisson arrivals for a slot in the batch and for room in the token budget (``queueing``).
"""

import math
from typing import Literal

import msgspec

from service.sizing.errors import require
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.queueing import budget_wait_s, slot_wait_s
from service.sizing.serving.simulate import POLICIES, LengthShape, Policy, lengths, simulate
from service.sizing.serving.step import StepCosts, StepTime, step_time
from service.sizing.serving.traffic_plan import Bottleneck

LengthDistribution = Literal["fixed", "exponential", "sharegpt", "uniform"]


class EngineLimits(msgspec.Struct, frozen=True, kw_only=True):
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_pool_tokens: int
    """The vLLM method's 'GPU KV cache size: N tokens'."""


class Workload(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: float
    output_tokens: float
    concurrency: int | None = None
    """Closed loop of N clients; None with num_prompts: every prompt at once."""
    request_rate_per_s: float | None = None
    """Open loop; exclusive with concurrency."""
    num_prompts: int | None = None
    """A finite benchmark of P prompts; None: the steady state."""
    output_distribution: LengthDistribution = "fixed"
    length_low_ratio: float = 0.0
    """``uniform`` only: lengths drawn uniformly from this fraction of the longest to the
    longest, around the means above."""


class ServingPrediction(msgspec.Struct, frozen=True, kw_only=True):
    ttft_s: float | None
    """Mean time to first token; None when an open loop is past capacity (it grows without
    bound)."""
    tpot_s: float
    itl_s: float
    output_tokens_per_s: float
    """Per replica."""
    total_tokens_per_s: float
    requests_per_s: float
    output_tokens_per_s_per_gpu: float
    total_tokens_per_s_per_gpu: float
    running_batch: float
    bottleneck: Bottleneck
    gpus: int
    stable: bool = True
    utilisation: float | None = None
    duration_s: float | None = None
    """A finite benchmark's wall time."""


def _step(
    costs: StepCosts, eff: Efficiency, w: Workload, prefill: float, decode: float
) -> StepTime:
    return step_time(
        costs,
        eff,
        prefill_tokens=prefill,
        prefill_context=w.input_tokens / 2,
        decode_sequences=decode,
        decode_context=w.input_tokens + w.output_tokens / 2,
    )


def batch_limit(limits: EngineLimits, w: Workload) -> tuple[float, Bottleneck | None]:
    """The most sequences that can run at once and what sets it (None: the token budget, which
    makes the steps prefill-bound, a compute limit)."""
    kv = limits.kv_pool_tokens / (w.input_tokens + w.output_tokens / 2)
    budget = limits.max_num_batched_tokens / (1 + w.input_tokens / w.output_tokens)
    options: list[tuple[float, Bottleneck | None]] = [
        (float(limits.max_num_seqs), "max-num-seqs"),
        (kv, "kv-capacity"),
        (budget, None),
    ]
    best = min(options, key=lambda o: o[0])
    require(best[0] >= 1, "kv_pool_tokens", "the KV pool cannot hold one request of this workload")
    return best


def steady_step(
    costs: StepCosts, eff: Efficiency, limits: EngineLimits, w: Workload, batch: float
) -> StepTime:
    """A steady-state step of ``batch`` running sequences: their decode tokens plus the
    replacing requests' prompt tokens, within the budget.

    An engine that runs prompts outside its CUDA graphs (``StepCosts.eager_prefill``) pays the
    eager launches once per prefill batch, not every step: the ``batch / output`` requests that
    finish a step are replaced by one prefill batch on at most every step, so a step carries
    that share (at most 1) of the eager step's excess over the same step in a graph."""
    prefill = max(
        min(batch * w.input_tokens / w.output_tokens, limits.max_num_batched_tokens - batch), 0.0
    )
    step = _step(costs, eff, w, prefill, batch)
    if not (costs.eager_prefill and prefill > 0):
        return step
    graph = _step(msgspec.structs.replace(costs, eager_prefill=False), eff, w, prefill, batch)
    share = min(1.0, batch / w.output_tokens)
    total = graph.total_s + share * (step.total_s - graph.total_s)
    return msgspec.structs.replace(graph, total_s=total)


def prefill_time_s(
    costs: StepCosts, eff: Efficiency, limits: EngineLimits, w: Workload, batch: float
) -> float:
    """One prompt's chunked prefill beside ``batch`` decoding sequences."""
    chunk = max(min(w.input_tokens, limits.max_num_batched_tokens - batch), 1.0)
    chunks = math.ceil(w.input_tokens / chunk)
    return chunks * _step(costs, eff, w, chunk, batch).total_s


def open_loop_ttft_s(
    costs: StepCosts,
    eff: Efficiency,
    limits: EngineLimits,
    w: Workload,
    batch: float,
    max_batch: float,
    step: StepTime,
) -> float | None:
    """Mean TTFT of Poisson arrivals that keep ``batch`` sequences running (of at most
    ``max_batch``; ``step``: their steady step): the waits for a slot and for budget room, the
    prompt's own chunked prefill and half a step; None when a queue grows without bound."""
    prefill_s = prefill_time_s(costs, eff, limits, w, batch)
    room = limits.max_num_batched_tokens - batch
    prefill_per_step = max(min(batch * w.input_tokens / w.output_tokens, room), 0.0)
    waits = slot_wait_s(batch, max_batch, w.output_tokens * step.total_s) + budget_wait_s(
        prefill_per_step, room, prefill_s
    )
    if not math.isfinite(waits):
        return None
    return waits + prefill_s + step.total_s / 2


def _prediction(
    costs: StepCosts,
    w: Workload,
    *,
    batch: float,
    tpot_s: float,
    output_tokens_per_s: float,
    ttft_s: float | None,
    bottleneck: Bottleneck,
    **extra: float | bool | None,
) -> ServingPrediction:
    gpus = costs.tensor_parallel * costs.pipeline_parallel
    requests = output_tokens_per_s / w.output_tokens
    total = requests * (w.input_tokens + w.output_tokens)
    return ServingPrediction(
        ttft_s=ttft_s,
        tpot_s=tpot_s,
        itl_s=tpot_s,
        output_tokens_per_s=output_tokens_per_s,
        total_tokens_per_s=total,
        requests_per_s=requests,
        output_tokens_per_s_per_gpu=output_tokens_per_s / gpus,
        total_tokens_per_s_per_gpu=total / gpus,
        running_batch=batch,
        bottleneck=bottleneck,
        gpus=gpus,
        **extra,  # type: ignore[arg-type]
    )


def _validate(w: Workload) -> None:
    require(w.input_tokens >= 1, "input_tokens", "must be at least 1")
    require(w.output_tokens >= 1, "output_tokens", "must be at least 1")
    require(w.concurrency is None or w.concurrency >= 1, "concurrency", "must be at least 1")
    require(
        w.request_rate_per_s is None or w.request_rate_per_s > 0,
        "request_rate_per_s",
        "must be positive",
    )
    require(
        w.concurrency is None or w.request_rate_per_s is None,
        "request_rate_per_s",
        "give a concurrency (closed loop) or a request rate (open loop), not both",
    )


def closed_loop(
    costs: StepCosts, eff: Efficiency, limits: EngineLimits, w: Workload
) -> ServingPrediction:
    """The steady state of N = ``w.concurrency`` clients."""
    _validate(w)
    require(w.concurrency is not None, "concurrency", "a closed loop needs a concurrency")
    assert w.concurrency is not None
    cap, limit = batch_limit(limits, w)
    batch = min(float(w.concurrency), cap)
    step = steady_step(costs, eff, limits, w, batch)
    out = batch / step.total_s
    queue = (w.concurrency - batch) * w.output_tokens / out if w.concurrency > batch else 0.0
    bottleneck: Bottleneck = step.bound
    if w.concurrency > cap:
        bottleneck = limit or "compute"
    ttft = queue + prefill_time_s(costs, eff, limits, w, batch)
    return _prediction(
        costs,
        w,
        batch=batch,
        tpot_s=step.total_s,
        output_tokens_per_s=out,
        ttft_s=ttft,
        bottleneck=bottleneck,
    )


def benchmark(
    costs: StepCosts,
    eff: Efficiency,
    limits: EngineLimits,
    w: Workload,
    policy: Policy | None = None,
    weibull_shape: float | None = None,
) -> ServingPrediction:
    """A finite run of ``w.num_prompts`` prompts, at most ``w.concurrency`` at once (None: all),
    as ``vllm bench serve`` reports it: totals over the run's duration, means over requests;
    simulated step by step (``simulate``) under the engine's scheduling ``policy`` (vLLM's by
    default)."""
    _validate(w)
    require(w.num_prompts is not None and w.num_prompts >= 1, "num_prompts", "must be at least 1")
    assert w.num_prompts is not None
    shape: LengthShape = "sharegpt"
    if w.output_distribution in ("fixed", "uniform"):
        shape = "uniform" if w.output_distribution == "uniform" else "fixed"
    requests = lengths(
        w.num_prompts, w.input_tokens, w.output_tokens, shape, weibull_shape, w.length_low_ratio
    )
    run = simulate(
        costs,
        eff,
        max_num_seqs=limits.max_num_seqs,
        token_budget=limits.max_num_batched_tokens,
        kv_pool_tokens=limits.kv_pool_tokens,
        requests=requests,
        concurrency=w.concurrency,
        policy=policy or POLICIES["vllm"],
    )
    batch = max(run.mean_running, 1.0)
    bottleneck: Bottleneck = steady_step(costs, eff, limits, w, batch).bound
    if run.preemptions or run.kv_wait_s > max(run.seqs_wait_s, 0.1 * run.duration_s):
        bottleneck = "kv-capacity"
    elif run.seqs_wait_s > 0.1 * run.duration_s:
        bottleneck = "max-num-seqs"
    return _prediction(
        costs,
        w,
        batch=run.mean_running,
        tpot_s=run.mean_tpot_s,
        output_tokens_per_s=run.output_tokens_per_s,
        ttft_s=run.mean_ttft_s,
        bottleneck=bottleneck,
        duration_s=run.duration_s,
    )


def open_loop(
    costs: StepCosts, eff: Efficiency, limits: EngineLimits, w: Workload
) -> ServingPrediction:
    """Requests arriving at ``w.request_rate_per_s``."""
    _validate(w)
    require(w.request_rate_per_s is not None, "request_rate_per_s", "an open loop needs a rate")
    assert w.request_rate_per_s is not None
    rate = w.request_rate_per_s
    cap, limit = batch_limit(limits, w)
    full = steady_step(costs, eff, limits, w, cap)
    capacity = cap / full.total_s / w.output_tokens
    utilisation = rate / capacity
    if utilisation >= 1:
        return _prediction(
            costs,
            w,
            batch=cap,
            tpot_s=full.total_s,
            output_tokens_per_s=cap / full.total_s,
            ttft_s=None,
            bottleneck=limit or "compute",
            stable=False,
            utilisation=utilisation,
        )
    batch = min(cap, max(rate * w.output_tokens * eff.step_overhead_s, 1e-9))
    for _ in range(100):  # batch = rate x output x TPOT(batch): TPOT grows slowly with batch
        nxt = min(cap, rate * w.output_tokens * steady_step(costs, eff, limits, w, batch).total_s)
        if abs(nxt - batch) <= 1e-9 * max(batch, 1.0):
            break
        batch = nxt
    step = steady_step(costs, eff, limits, w, batch)
    ttft = open_loop_ttft_s(costs, eff, limits, w, batch, cap, step)
    return _prediction(
        costs,
        w,
        batch=batch,
        tpot_s=step.total_s,
        output_tokens_per_s=rate * w.output_tokens,
        ttft_s=ttft,
        bottleneck=step.bound,
        utilisation=utilisation,
    )
