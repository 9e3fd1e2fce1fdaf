"""The open loop's queues: Erlang C, the Allen-Cunneen wait for fixed service times (M/D/c),
and the TTFT of Poisson arrivals on steps of a fixed 10 ms."""

import math

import pytest

from service.sizing.serving.loop import EngineLimits, Workload, open_loop
from service.sizing.serving.queueing import budget_wait_s, erlang_c, mean_wait_s
from tests.unit.sizing.serving.curves import FREE, TEN_MS


def test_erlang_c_of_one_server_is_its_utilisation() -> None:
    # M/M/1: an arrival waits with probability rho.
    assert erlang_c(1, 0.5) == pytest.approx(0.5)


def test_erlang_c_of_two_servers_at_one_erlang_is_a_third() -> None:
    # P(wait) = (a^c / c!) (c / (c - a)) / (sum_{k<c} a^k / k! + the same term)
    # = (1/2 x 2) / (1 + 1 + 1) = 1/3.
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)


def test_one_server_with_a_fixed_service_waits_pollaczek_khinchine() -> None:
    # M/D/1: W = rho x S / (2 (1 - rho)) = 0.5 x 2 s / (2 x 0.5) = 1 s at rho = 0.5, S = 2 s.
    assert mean_wait_s(1, 0.5, 2.0) == pytest.approx(1.0)


def test_a_saturated_queue_waits_forever_and_an_idle_one_not_at_all() -> None:
    assert mean_wait_s(4, 4.0, 1.0) == math.inf
    assert mean_wait_s(4, 0.0, 1.0) == 0.0
    assert budget_wait_s(10, 0, 0.01) == math.inf


def test_open_loop_ttft_adds_the_slot_and_budget_waits_to_prefill_and_half_a_step() -> None:
    # 10 places, 100 in / 100 out at 5 requests/s, 10 ms steps: 5 sequences run, each holding
    # its place 100 x 10 ms = 1 s. Slot wait, M/D/10 at a = 5: Erlang C(10, 5) =
    # (5^10/10! x 10/5) / (sum_{k<10} 5^k/k! + 5^10/10! x 10/5) = 5.38229 / (143.68946 +
    # 5.38229) = 0.0361054; x S / (c - a) = 1 s / 5, x 1/2 for a fixed service: 3.61054 ms.
    # Budget wait: 5 x 100 / 100 = 5 prompt tokens a step of 8,192 - 5 = 8,187 room, rho =
    # 6.1073e-4, a prompt's prefill one 10 ms step: M/D/1 rho x S / (2 (1 - rho)) = 3.0555 us.
    # TTFT = 3.61054 ms + 0.0030555 ms + 10 ms prefill + 5 ms half a step = 18.61359 ms.
    limits = EngineLimits(max_num_seqs=10, max_num_batched_tokens=8192, kv_pool_tokens=10**9)
    w = Workload(input_tokens=100, output_tokens=100, request_rate_per_s=5)
    p = open_loop(FREE, TEN_MS, limits, w)
    assert p.ttft_s == pytest.approx(0.01861359, rel=1e-6)


def test_an_open_loop_near_its_slot_limit_waits_most_of_a_second_for_a_place() -> None:
    # At 9.5 requests/s the 10 places run 9.5 sequences: Erlang C(10, 9.5) = 0.825586 (the
    # same sum as above with a = 9.5), wait 0.825586 x 1 s / (10 - 9.5) / 2 = 0.825586 s; the
    # budget's rho = 9.5 / 8,182.5 = 1.16101e-3 adds 1.16101e-3 x 10 ms / (2 x 0.998839) =
    # 5.812 us; TTFT = 0.825586 + 0.0000058 + 0.015 = 0.840591 s (against 18.6 ms at 5/s).
    limits = EngineLimits(max_num_seqs=10, max_num_batched_tokens=8192, kv_pool_tokens=10**9)
    w = Workload(input_tokens=100, output_tokens=100, request_rate_per_s=9.5)
    busy = open_loop(FREE, TEN_MS, limits, w)
    assert busy.ttft_s == pytest.approx(0.840591, rel=1e-5)
