"""A finite benchmark, step by step: the engine's scheduler against ``vllm bench serve``'s client.

A small deterministic discrete-event simulation. The client sends P requests, at most N at
once (``--max-concurrency N``; none: all at t = 0) and the next one the moment one ends. The
engine runs steps; each step's time is ``step_time`` of what it holds. A run of pure decode
steps with nothing to admit is one event (its steps differ only in context, priced at the
run's middle), so a benchmark of P requests costs about 2P step prices: milliseconds.

Scheduling, per engine (``Policy``):
- vLLM V1 (``vllm/v1/core/sched/scheduler.py``): the running requests first (one token per
  decoding sequence, the next chunk of a partial prefill), then waiting requests in arrival
  order while the step's token budget (max_num_batched_tokens), max_num_seqs and the free KV
  pool allow, the last one chunked; a request takes KV as its tokens are computed, and when
  the pool runs out during decode the most recently admitted request is preempted (its KV
  freed; it re-prefills its prompt and the tokens it had, first in line, less what the prefix
  cache still holds of them: ``Policy.prefix_caching``).
- SGLang (``python/sglang/srt/managers/scheduler.py``, ``get_next_batch_to_run``): a prefill
  batch runs alone, before any decode, whenever a waiting request can be admitted (up to
  chunked_prefill_size tokens); admission reserves each running and new request's remaining
  output x new_token_ratio (0.7 at start, decaying to 0.7 x 0.14 over 600 decode steps:
  ``global_config.py``'s init_new_token_ratio, min_new_token_ratio_factor and
  new_token_ratio_decay_steps).
- TensorRT-LLM (trtllm-serve): in-flight batching like vLLM's, but the default capacity
  scheduler, GUARANTEED_NO_EVICT, admits a request only when the pool holds its prompt and
  its whole output (TensorRT-LLM's "Useful Runtime Options": the default policy "guarantee[s]
  that a started request is never paused"), and a prompt is not chunked (chunked context is
  off by default) but must fit the step's max_num_tokens.

What the client reports (``vllm/benchmarks/serve.py``): TTFT = first token - send; a
request's TPOT = (latency - TTFT) / (output - 1), averaged over requests with more than one
output token; output tokens/s = all output tokens / the run's duration (the last request's
end). The first output token comes out of the step that finishes the prompt's prefill.

Request lengths: ``fixed`` (``vllm bench serve --dataset-name random``, whose range ratio
defaults to 0), ``uniform`` (sglang.bench_serving's and InferenceMAX's random draws, from a
ratio of the longest to the longest) or ``sharegpt``: deterministic Weibull quantiles
(SHAREGPT_WEIBULL_SHAPE) of the run's mean input and output, clipped as vLLM's ShareGPT
sampler filters them (``vllm/benchmarks/datasets.py``, ``is_valid_sequence``: prompt and
output at least 4 tokens, prompt at most 1,024, prompt + output at most 2,048), input and
output paired and ordered by a fixed shuffle. The Weibull shape is fitted, not measured.
"""

import heapq
import math
import random
from collections import deque
from typing import Literal

import msgspec

from service.sizing.errors import require
from service.sizing.serving.efficiency import Efficiency, Engine
from service.sizing.serving.step import StepCosts, step_time

LengthShape = Literal["fixed", "sharegpt", "uniform"]

SHAREGPT_MIN = 4
SHAREGPT_MAX_PROMPT = 1024
SHAREGPT_MAX_TOTAL = 2048
SHAREGPT_WEIBULL_SHAPE = 0.8
"""The shape k of the Weibull law the ShareGPT lengths follow (1: exponential; below 1, more
very short and very long requests around the same mean). Fitted on the calibration half by
bench/serving_calibration.py: a property of the dataset as vLLM's sampler filters it, not of
a run."""


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    prefill_first: bool = False
    """SGLang: a prefill batch runs alone and pauses the decodes."""
    reserve_output: bool = False
    """TensorRT-LLM GUARANTEED_NO_EVICT: admission holds the prompt and the whole output."""
    new_token_ratio: tuple[float, float, int] | None = None
    """SGLang: (initial ratio, floor, decode steps to decay) of the output reserved."""
    chunked_prefill: bool = True
    prefix_caching: bool = False
    """vLLM V1 (on by default): a preempted request's blocks go back to the free queue as
    cached blocks, behind the free ones (``kv_cache_manager.free`` frees a request's blocks
    in reverse order to the queue's tail; allocation evicts from its head), so on its return
    it recomputes only what others allocated over since (``get_computed_blocks``)."""


POLICIES: dict[Engine, Policy] = {
    "vllm": Policy(prefix_caching=True),
    "sglang": Policy(prefill_first=True, new_token_ratio=(0.7, 0.7 * 0.14, 600)),
    "tensorrt-llm": Policy(reserve_output=True, chunked_prefill=False),
}


class Request:
    __slots__ = (
        "cached",
        "done",
        "epoch",
        "first",
        "gen",
        "input",
        "mark",
        "output",
        "prefilled",
        "sent",
        "start_g",
    )

    def __init__(self, input_tokens: int, output_tokens: int) -> None:
        self.input = input_tokens
        self.output = output_tokens
        self.sent = 0.0
        self.first = -1.0
        self.done = -1.0
        self.gen = 0
        """Output tokens produced before the current decode run (preemption keeps them)."""
        self.prefilled = 0
        """Tokens of prompt + ``gen`` computed in the current admission."""
        self.start_g = 0
        """The global decode-step count when its current decode run began."""
        self.epoch = 0
        """Bumped at each preemption: older entries of the finish heap are stale."""
        self.cached = 0
        """Tokens its preemption left in the prefix cache (vLLM frees them as cached blocks)."""
        self.mark = 0
        """The pool's allocation count when it was preempted."""

    def target(self) -> int:
        """Tokens to compute before it decodes again: the prompt and any output it had."""
        return self.input + self.gen


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    duration_s: float
    mean_ttft_s: float
    mean_tpot_s: float
    output_tokens_per_s: float
    mean_running: float
    """Time-weighted mean of the decoding sequences."""
    peak_running: int
    preemptions: int
    kv_wait_s: float = 0.0
    """Time during which a waiting request could not be admitted for want of KV pool."""
    seqs_wait_s: float = 0.0
    """Time during which one waited because max_num_seqs requests were running."""
    median_tpot_s: float = 0.0
    mean_itl_s: float = 0.0
    """Mean time between a request's tokens over all decode tokens (the client's mean ITL)."""


def lengths(
    prompts: int,
    input_mean: float,
    output_mean: float,
    shape: LengthShape,
    weibull_shape: float | None = None,
    low_ratio: float = 0.0,
) -> list[tuple[int, int]]:
    """``weibull_shape``: the ShareGPT lengths' Weibull shape (None: SHAREGPT_WEIBULL_SHAPE);
    ``low_ratio``: for ``uniform``, the shortest length as a fraction of the longest (a random
    dataset's range ratio as sglang.bench_serving and InferenceMAX's client draw it: uniform
    from ratio x L to L)."""
    if shape == "fixed":
        i, o = max(1, round(input_mean)), max(1, round(output_mean))
        return [(i, o)] * prompts
    if shape == "uniform":

        def spread(mean: float) -> list[float]:
            top = 2 * mean / (1 + low_ratio)
            low = low_ratio * top
            return [max(1.0, low + (top - low) * (k + 0.5) / prompts) for k in range(prompts)]

        ins, outs = spread(input_mean), spread(output_mean)
        random.Random(1).shuffle(ins)
        random.Random(2).shuffle(outs)
        return [(round(i), round(o)) for i, o in zip(ins, outs, strict=True)]

    def quantiles(mean: float, cap: int) -> list[float]:
        power = 1 / (weibull_shape or SHAREGPT_WEIBULL_SHAPE)
        xs = [(-math.log(1 - (k + 0.5) / prompts)) ** power for k in range(prompts)]
        scale = mean
        for _ in range(4):  # rescale so the clipped values keep the run's mean
            got = sum(min(max(scale * x, SHAREGPT_MIN), cap) for x in xs) / prompts
            scale *= mean / got
        return [min(max(scale * x, SHAREGPT_MIN), cap) for x in xs]

    ins = quantiles(input_mean, SHAREGPT_MAX_PROMPT)
    outs = quantiles(output_mean, SHAREGPT_MAX_TOTAL - SHAREGPT_MAX_PROMPT)
    random.Random(1).shuffle(ins)
    random.Random(2).shuffle(outs)
    pairs = zip(ins, outs, strict=True)
    return [(round(i), round(min(o, SHAREGPT_MAX_TOTAL - i))) for i, o in pairs]


def simulate(
    costs: StepCosts,
    eff: Efficiency,
    *,
    max_num_seqs: int,
    token_budget: int,
    kv_pool_tokens: int,
    requests: list[tuple[int, int]],
    concurrency: int | None,
    policy: Policy,
) -> Outcome:
    """Run ``requests`` ((input, output) tokens, in send order) through the engine."""
    require(bool(requests), "num_prompts", "must be at least 1")
    reqs = [Request(i, o) for i, o in requests]
    longest = max(r.input + (r.output if policy.reserve_output else 1) for r in reqs)
    require(longest <= kv_pool_tokens, "kv_pool_tokens", "the KV pool cannot hold one request")
    if not policy.chunked_prefill:
        require(
            max(r.input for r in reqs) <= token_budget,
            "max_num_batched_tokens",
            "a prompt is longer than the step's token budget and prefill is not chunked",
        )
    n = len(reqs) if concurrency is None else min(concurrency, len(reqs))
    waiting: deque[Request] = deque(reqs[:n])
    sent = n
    running: list[Request] = []  # admission order; the tail is preempted first
    prefilling: list[Request] = []
    finish: list[tuple[int, int, int, Request]] = []  # (end step, tie, epoch, request)
    now, g, decoding, context, used, reserved, remaining = 0.0, 0, 0, 0, 0, 0, 0
    busy, peak, preempted, done, tie = 0.0, 0, 0, 0, 0
    kv_wait, seqs_wait = 0.0, 0.0
    allocated = 0  # tokens the pool has handed out so far

    def hits(r: Request) -> int:
        """Tokens of a returning preempted request still in the prefix cache (at least its
        last token is recomputed, to sample the next one)."""
        if not (policy.prefix_caching and r.cached):
            return 0
        return max(0, min(r.cached - (allocated - r.mark), r.target() - 1))

    def ratio() -> float:
        assert policy.new_token_ratio is not None
        start, floor, steps = policy.new_token_ratio
        return max(floor, start - (start - floor) * g / steps)

    def admissible(r: Request, budget: int) -> int:
        """Prompt tokens of ``r`` this step can take (0: it must wait)."""
        if len(running) >= max_num_seqs or budget <= 0:
            return 0
        cached = hits(r)
        need = r.target() - cached
        take = min(need, budget) if policy.chunked_prefill else (need if need <= budget else 0)
        if take <= 0:
            return 0
        if policy.reserve_output:
            fits = reserved + r.input + r.output <= kv_pool_tokens
        elif policy.new_token_ratio is not None:
            pending = sum(p.target() - p.prefilled for p in prefilling)
            held = used + pending + ratio() * (remaining + r.output - r.gen)
            fits = held + need <= kv_pool_tokens
        else:
            fits = used + cached + take <= kv_pool_tokens
        return take if fits else 0

    while done < len(reqs):
        # 1. this step's prefill tokens: partial prefills first, then admissions
        decodes_run = not (policy.prefill_first and (prefilling or waiting))
        budget = max(0, token_budget - (decoding if decodes_run else 0))
        chunks: list[tuple[Request, int]] = []
        for r in prefilling:
            take = min(r.target() - r.prefilled, budget)
            if take > 0:
                chunks.append((r, take))
                budget -= take
        while waiting and (take := admissible(waiting[0], budget)) > 0:
            r = waiting.popleft()
            cached = hits(r)
            r.prefilled, r.cached = cached, 0
            used += cached
            running.append(r)
            prefilling.append(r)
            reserved += r.input + r.output
            remaining += r.output - r.gen
            chunks.append((r, take))
            budget -= take
        if not chunks:
            decodes_run = True
        blocked = ""
        if waiting and budget > 0:
            blocked = "seqs" if len(running) >= max_num_seqs else "kv"
        # 2. how many steps run before something changes
        while finish and finish[0][2] != finish[0][3].epoch:
            heapq.heappop(finish)  # a preempted request's old end
        k = 1 if decodes_run and decoding else 0
        if not chunks:
            require(decoding > 0, "kv_pool_tokens", "the KV pool cannot hold one request")
            k = finish[0][0] - g
            if not policy.reserve_output:
                k = min(k, max(1, (kv_pool_tokens - used) // decoding))
            if waiting and policy.new_token_ratio is not None:
                k = min(k, 32)  # the reserve decays: look again for admissions
        # 3. price the step(s)
        prefill = sum(t for _, t in chunks)
        ctx = sum(t * (r.prefilled + t / 2) for r, t in chunks) / prefill if prefill else 0.0
        mean_ctx = context / decoding + (k - 1) / 2 if k else 0.0
        step = step_time(
            costs,
            eff,
            prefill_tokens=prefill,
            prefill_context=ctx,
            decode_sequences=decoding if k else 0,
            decode_context=mean_ctx,
        ).total_s
        steps = max(k, 1)
        now += step * steps
        if blocked == "kv":
            kv_wait += step * steps
        elif blocked == "seqs":
            seqs_wait += step * steps
        busy += decoding * step * k
        # 4. advance: the decodes, then the prefills that completed
        allocated += decoding * k + prefill
        g += k
        context += decoding * k
        used += decoding * k
        remaining -= decoding * k
        for r, t in chunks:
            r.prefilled += t
            used += t
            if r.prefilled < r.target():
                continue
            prefilling.remove(r)
            if r.first < 0:
                r.first = now
            r.gen += 1  # the prefill's step samples the next token
            remaining -= 1
            r.start_g = g
            tie += 1
            heapq.heappush(finish, (g + max(r.output - r.gen, 0), tie, r.epoch, r))
            decoding += 1
            context += r.prefilled
        peak = max(peak, decoding)
        # 5. finished requests leave; their clients send the next ones
        while finish and finish[0][0] <= g:
            _, _, epoch, r = heapq.heappop(finish)
            if epoch != r.epoch:
                continue
            r.done = now
            done += 1
            decoding -= 1
            held = r.prefilled + (g - r.start_g)
            context -= held
            used -= held
            reserved -= r.input + r.output
            running.remove(r)
            if sent < len(reqs):
                reqs[sent].sent = now
                waiting.append(reqs[sent])
                sent += 1
        # 6. the pool ran out: preempt the latest admitted until the rest fit
        while used > kv_pool_tokens and len(running) > 1:
            r = running.pop()
            preempted += 1
            r.mark = allocated
            if r in prefilling:
                prefilling.remove(r)
                used -= r.prefilled
                r.cached = r.prefilled
            else:
                decoding -= 1
                ran = g - r.start_g
                context -= r.prefilled + ran
                used -= r.prefilled + ran
                r.cached = r.prefilled + ran
                r.gen += ran
                r.epoch += 1
            remaining -= r.output - r.gen
            reserved -= r.input + r.output
            r.prefilled = 0
            waiting.appendleft(r)
    ttft = sum(r.first - r.sent for r in reqs) / len(reqs)
    multi = [r for r in reqs if r.output > 1]
    tpots = sorted((r.done - r.first) / (r.output - 1) for r in multi)
    tpot = sum(tpots) / len(tpots) if tpots else 0.0
    median_tpot = tpots[len(tpots) // 2] if tpots else 0.0
    total_out = sum(r.output for r in reqs)
    gaps = sum(r.output - 1 for r in multi)
    itl = sum(r.done - r.first for r in multi) / gaps if gaps else 0.0
    return Outcome(
        duration_s=now,
        mean_ttft_s=ttft,
        mean_tpot_s=tpot,
        output_tokens_per_s=total_out / now,
        mean_running=busy / now if now > 0 else 0.0,
        peak_running=peak,
        preemptions=preempted,
        kv_wait_s=kv_wait,
        seqs_wait_s=seqs_wait,
        mean_itl_s=itl,
        median_tpot_s=median_tpot,
    )
