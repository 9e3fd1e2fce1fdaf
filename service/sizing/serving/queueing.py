"""How long an arriving request waits in an open loop before its prompt is prefilled.

Requests arrive as a Poisson stream (what ``vllm bench serve --request-rate R`` sends with its
default burstiness 1) and queue twice:

- for a slot in the running batch, which holds at most ``max_batch`` sequences (max_num_seqs,
  the KV pool, the token budget): ``max_batch`` servers, each held for the request's decode;
- for room in the steps' token budget, where prompts are chunked in arrival order beside the
  running decodes (vLLM V1's scheduler, ``vllm/v1/core/sched/scheduler.py``: the running
  requests' tokens are scheduled first, then waiting prompts, first come first served).

Each queue's mean wait is the M/M/c wait (Erlang C) times (1 + cs^2) / 2, the Allen-Cunneen
approximation for general service times with cs^2 the squared coefficient of variation of the
service time: 0 for the fixed lengths a traffic plan gives (M/D/c; with one server that is
exactly Pollaczek-Khinchine's M/D/1 wait rho x S / (2 (1 - rho))).
"""

import math

FIXED_SERVICE_CV2 = 0.0
"""Squared coefficient of variation of the service time for fixed prompt and answer lengths."""


def erlang_c(servers: int, offered: float) -> float:
    """The probability that an arrival waits, with ``servers`` servers and ``offered`` erlangs
    (arrival rate x mean service time); 1 at or past saturation.

    Erlang B from 1 / B = sum_j c! / ((c - j)! a^j) (j = 0..c), whose terms rise while
    j < c - a and then fall: the sum stops once a term no longer moves it, or once it passes
    1e18 (B below 1e-18: no wait worth a float), so a large batch costs tens of terms, not c."""
    if offered <= 0:
        return 0.0
    if offered >= servers:
        return 1.0
    if servers == 1:
        return offered  # M/M/1: an arrival waits with probability rho
    term = total = 1.0
    for j in range(1, servers + 1):
        term *= (servers - j + 1) / offered
        total += term
        if total > 1e18 or term < 1e-17 * total:
            break
    blocked = 1 / total
    return servers * blocked / (servers - offered * (1 - blocked))


def mean_wait_s(
    servers: int, offered: float, service_s: float, service_cv2: float = FIXED_SERVICE_CV2
) -> float:
    """Mean time in queue before service: Erlang C x S / (c - a) x (1 + cs^2) / 2; infinite at
    or past saturation (a >= c)."""
    if offered <= 0 or service_s <= 0:
        return 0.0
    if offered >= servers:
        return math.inf
    mmc = erlang_c(servers, offered) * service_s / (servers - offered)
    return mmc * (1 + service_cv2) / 2


def slot_wait_s(batch: float, max_batch: float, hold_s: float) -> float:
    """The wait for a place in the running batch: ``batch`` sequences run on average (Little's
    law: rate x hold), of at most ``max_batch`` places, each held ``hold_s`` (the decode)."""
    return mean_wait_s(max(1, math.floor(max_batch)), batch, hold_s)


def budget_wait_s(prefill_tokens_per_step: float, room_tokens: float, prefill_s: float) -> float:
    """The wait for room in the token budget: ``prefill_tokens_per_step`` of the steps'
    ``room_tokens`` (the budget less the decodes) go to prompts on average, so the budget is
    busy that share of the time (one server), and a prompt's own prefill takes ``prefill_s``."""
    if room_tokens <= 0:
        return math.inf
    return mean_wait_s(1, prefill_tokens_per_step / room_tokens, prefill_s)
