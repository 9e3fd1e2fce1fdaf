"""The open loop read as a curve over the running batch, and the most a replica takes within
limits, on curves whose figures follow by hand."""

import pytest

from service.sizing.serving.curve import (
    Limits,
    at_rate,
    open_loop_curve,
    replica_capacity,
)
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.loop import EngineLimits, Workload, open_loop
from service.sizing.serving.step import StepCosts
from tests.unit.sizing.serving.curves import linear

# TPOT = 0.01 + 0.001 b s, 100-token answers, at most 100 sequences: the capacity is
# 100 / (100 x (0.01 + 0.1)) = 9.0909 requests/s.
CURVE = linear(100, 0.01, 0.001, 0.1, 0.01)


def test_without_limits_the_most_is_max_utilisation_of_the_capacity() -> None:
    # 0.9 x 9.0909 = 8.1818/s: b / (100 (0.01 + 0.001 b)) = 8.1818 -> b = 8.1818 / (1 -
    # 0.81818) = 45.
    cap = replica_capacity(CURVE, Limits())
    assert cap.capacity_requests_per_s == pytest.approx(100 / 11)
    assert cap.max_requests_per_s == pytest.approx(0.9 * 100 / 11)
    assert cap.batch == pytest.approx(45)
    assert cap.limited_by == "utilisation"


def test_a_tpot_limit_stops_the_batch_where_tpot_reaches_it() -> None:
    # TPOT <= 0.05 -> b = 40, rate 40 / (100 x 0.05) = 8/s (under 8.18).
    cap = replica_capacity(CURVE, Limits(tpot_s=0.05))
    assert cap.batch == pytest.approx(40)
    assert cap.max_requests_per_s == pytest.approx(8)
    assert cap.limited_by == "tpot"


def test_a_tighter_ttft_limit_binds_instead() -> None:
    # TTFT = 0.1 + 0.01 b <= 0.35 -> b = 25, TPOT 0.035, rate 25 / 3.5 = 7.1429/s.
    cap = replica_capacity(CURVE, Limits(tpot_s=0.05, ttft_s=0.35))
    assert cap.batch == pytest.approx(25)
    assert cap.max_requests_per_s == pytest.approx(25 / 3.5)
    assert cap.limited_by == "ttft"


def test_a_limit_missed_with_no_load_leaves_no_rate() -> None:
    # TPOT is at least 0.01 s: a 5 ms limit is never met.
    cap = replica_capacity(CURVE, Limits(tpot_s=0.005))
    assert cap.max_requests_per_s == 0 and cap.limited_by is None
    assert cap.lightest.tpot_s == pytest.approx(0.01, rel=1e-3)


def test_at_rate_finds_the_batch_of_a_rate() -> None:
    # 5/s: b / (100 (0.01 + 0.001 b)) = 5 -> b = 5 / (1 - 0.5) = 10, TPOT 0.02.
    p = at_rate(CURVE, 5, 45)
    assert p.running_batch == pytest.approx(10)
    assert p.tpot_s == pytest.approx(0.02)


COSTS = StepCosts(
    tensor_parallel=2,
    layers=1,
    hidden_size=1,
    dense_weight_bytes=10**9,
    flops_per_token=1e9,
    attention_flops_per_context_token=1e3,
    kv_bytes_per_token=1e4,
    peak_flops_per_s=1e15,
    hbm_bytes_per_s=1e12,
)
EFF = Efficiency(
    flops_fraction=0.5, bandwidth_fraction=0.5, step_overhead_s=0.002, allreduce_latency_s=0
)
LIMITS = EngineLimits(max_num_seqs=256, max_num_batched_tokens=8192, kv_pool_tokens=200_000)


@pytest.mark.parametrize("batch", [1.0, 7.5, 40.0, 90.0])
def test_each_point_is_what_the_open_loop_answers_at_its_rate(batch: float) -> None:
    # The curve reads the open loop backwards: at the point's rate, open_loop must run the
    # same batch with the same TPOT and TTFT (whatever the step model's figures are).
    curve = open_loop_curve(COSTS, EFF, LIMITS, 1000, 200)
    point = curve.at(batch)
    w = Workload(input_tokens=1000, output_tokens=200, request_rate_per_s=point.requests_per_s)
    p = open_loop(COSTS, EFF, LIMITS, w)
    assert p.stable
    assert p.running_batch == pytest.approx(batch, rel=1e-6)
    assert p.tpot_s == pytest.approx(point.tpot_s, rel=1e-6)
    assert p.ttft_s == pytest.approx(point.ttft_s, rel=1e-6)
    assert p.output_tokens_per_s_per_gpu == pytest.approx(point.output_tokens_per_s_per_gpu)
    assert p.utilisation == pytest.approx(point.utilisation, rel=1e-6)
