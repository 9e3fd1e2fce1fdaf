"""Planning from traffic on synthetic replicas whose figures follow by hand: a predictor with
TPOT and TTFT linear in the arrival rate, and a capacity; prices constructed here."""

import math

import pytest

from service.sizing.cost import GpuPrice
from service.sizing.errors import SizingError
from service.sizing.serving.efficiency import Efficiency
from service.sizing.serving.loop import EngineLimits, ServingPrediction
from service.sizing.serving.step import StepCosts
from service.sizing.serving.traffic import (
    Candidate,
    Predict,
    ReplicaModel,
    Shortfall,
    Traffic,
    duration_text,
    plan_option,
    plan_traffic,
    replica_capacity,
    traffic_cost,
)


def linear(
    capacity: float,
    tpot0: float,
    tpot_slope: float = 0.0,
    ttft0: float = 0.1,
    ttft_slope: float = 0.0,
) -> Predict:
    """TPOT = tpot0 + tpot_slope x rate, TTFT = ttft0 + ttft_slope x rate below ``capacity``
    requests/s; at or past it, unstable (no TTFT) and completing ``capacity``."""

    def predict(rate: float) -> ServingPrediction:
        stable = rate < capacity
        done = rate if stable else capacity
        tpot = tpot0 + tpot_slope * min(rate, capacity)
        return ServingPrediction(
            ttft_s=ttft0 + ttft_slope * rate if stable else None,
            tpot_s=tpot,
            itl_s=tpot,
            output_tokens_per_s=done * 100,
            total_tokens_per_s=done * 200,
            requests_per_s=done,
            output_tokens_per_s_per_gpu=done * 100,
            total_tokens_per_s_per_gpu=done * 200,
            running_batch=done * 100 * tpot,
            bottleneck="hbm-bandwidth",
            gpus=1,
            stable=stable,
            utilisation=rate / capacity,
        )

    return predict


def usd(cents: int) -> GpuPrice:
    return GpuPrice(gpu="x", currency="USD", hourly_price_cents=cents, price_source="test")


def candidate(gpu: str, tp: int, cents: int | None = None, **kw: object) -> Candidate:
    return Candidate(
        gpu=gpu,
        gpu_name=gpu.upper(),
        tensor_parallel=tp,
        price=None if cents is None else usd(cents),
        **kw,  # type: ignore[arg-type]
    )


def by_table(table: dict[tuple[str, int], Predict]):  # type: ignore[no-untyped-def]
    return lambda c, _t: table[(c.gpu, c.tensor_parallel)]


T = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100)


def test_without_limits_a_replica_plans_on_its_capacity_times_max_utilisation() -> None:
    # Capacity 10 requests/s, max_utilisation 0.9: 9 requests/s per replica.
    cap = replica_capacity(linear(10, 0.01), T, "TP1 on X")
    assert cap.capacity_requests_per_s == pytest.approx(10)
    assert cap.max_requests_per_s == pytest.approx(9)
    assert cap.limited_by == "utilisation"


def test_a_tpot_limit_sets_the_most_a_replica_takes() -> None:
    # TPOT = 0.02 + 0.005 x rate <= 0.05 -> rate <= 6 requests/s (capacity 10 x 0.9 = 9 is
    # not reached).
    t = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, tpot_s=0.05)
    cap = replica_capacity(linear(10, 0.02, 0.005), t, "TP1 on X")
    assert cap.max_requests_per_s == pytest.approx(6, rel=1e-3)
    assert cap.max_requests_per_s <= 6  # the search keeps the side that meets the limit
    assert cap.limited_by == "tpot"


def test_a_ttft_limit_binds_when_it_is_the_tighter() -> None:
    # TTFT = 0.2 + 0.1 x rate <= 0.5 -> 3 requests/s; TPOT = 0.02 + 0.005 x rate <= 0.05 -> 6.
    t = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, tpot_s=0.05, ttft_s=0.5)
    cap = replica_capacity(linear(10, 0.02, 0.005, 0.2, 0.1), t, "TP1 on X")
    assert cap.max_requests_per_s == pytest.approx(3, rel=1e-3)
    assert cap.limited_by == "ttft"


def test_a_limit_missed_at_the_lightest_load_fails_with_the_figures() -> None:
    # TPOT 71 ms with no load against a 50 ms limit: no rate meets it.
    t = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, tpot_s=0.05)
    cap = replica_capacity(linear(10, 0.071), t, "TP1 on L40S")
    assert cap.max_requests_per_s == 0
    (miss,) = cap.shortfalls
    assert (miss.code, miss.field) == ("tpot", "traffic.tpot_s")
    assert miss.predicted_s == pytest.approx(0.071)
    assert miss.limit_s == 0.05
    assert miss.message == "TP1 on L40S: TPOT 71 ms > 50 ms at the lightest load"


def test_replicas_cover_the_rate_and_the_headroom_is_what_is_left() -> None:
    # 9 requests/s per replica: ceil(40 / 9) = 5 replicas of TP2 = 10 GPUs, 8 requests/s each;
    # headroom 1 - 8 / 9 = 0.111, utilisation 8 / 10 = 0.8. TPOT at 8/s: 0.01 + 0.001 x 8.
    # Cost: 10 GPUs x 250 c/h = 2,500 c/h, x 730 h = 1,825,000 c a month; 40 x 100 x 3,600 =
    # 14.4 M output tokens an hour: 2,500 / 14.4 = 173.6 -> 174 c per million.
    c = candidate("h100", 2, 250)
    o = plan_option(c, T, by_table({("h100", 2): linear(10, 0.01, 0.001)}))
    assert o.feasible
    assert (o.replicas, o.gpu_count, o.gpus_per_replica) == (5, 10, 2)
    assert o.requests_per_s_per_replica == pytest.approx(8)
    assert o.headroom == pytest.approx(1 - 8 / 9)
    assert o.utilisation == pytest.approx(0.8)
    assert o.tpot_s == pytest.approx(0.018)
    assert o.cost is not None
    assert o.cost.hourly_cost_cents == 2500
    assert o.cost.monthly_cost_cents == 1_825_000
    assert o.cost.cost_per_million_output_tokens_cents == 174


def test_an_exact_multiple_needs_no_extra_replica() -> None:
    # 9 requests/s per replica, 36 requested: exactly 4 replicas at 9 each, headroom 0.
    t = Traffic(requests_per_s=36, input_tokens=100, output_tokens=100)
    o = plan_option(candidate("a", 1), t, by_table({("a", 1): linear(10, 0.01)}))
    assert o.replicas == 4
    assert o.headroom == pytest.approx(0, abs=1e-9)


def test_the_cheapest_feasible_option_wins_and_each_cheaper_one_says_why() -> None:
    # 40 requests/s, TPOT <= 50 ms.
    # - L40S TP1 (100 c/h): TPOT 71 ms at no load: fails; one replica would cost 100 c/h.
    # - H100 TP1 (300 c/h): 9/s per replica (TPOT 10 ms), 5 replicas = 5 GPUs = 1,500 c/h.
    # - H100 TP2 (300 c/h): 18/s per TP2 replica, 3 replicas = 6 GPUs = 1,800 c/h.
    # - A100 TP1 (200 c/h): TPOT 0.03 + 0.01 x rate <= 0.05 -> 2/s, 20 replicas = 4,000 c/h.
    t = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, tpot_s=0.05)
    table = {
        ("l40s", 1): linear(10, 0.071),
        ("h100", 1): linear(10, 0.01),
        ("h100", 2): linear(20, 0.01),
        ("a100", 1): linear(10, 0.03, 0.01),
    }
    cands = [
        candidate("a100", 1, 200),
        candidate("h100", 2, 300),
        candidate("h100", 1, 300),
        candidate("l40s", 1, 100),
    ]
    plan = plan_traffic(cands, t, by_table(table))
    assert plan.feasible and plan.chosen is not None
    assert (plan.chosen.gpu, plan.chosen.tensor_parallel, plan.chosen.gpu_count) == ("h100", 1, 5)
    assert [(o.gpu, o.tensor_parallel) for o in plan.options] == [
        ("l40s", 1),
        ("h100", 1),
        ("h100", 2),
        ("a100", 1),
    ]
    assert plan.why_not_cheaper == ["TP1 on L40S: TPOT 71 ms > 50 ms at the lightest load"]
    a100 = plan.options[-1]
    assert a100.replicas == 20 and a100.cost is not None and a100.cost.hourly_cost_cents == 4000


def test_ranked_by_gpus_the_fewest_gpus_win_whatever_they_cost() -> None:
    # H100 TP2 at 20/s x 0.9 = 18/s: 3 replicas = 6 GPUs; A100 TP1 at 9/s: 5 GPUs, dearer per
    # GPU (500 c/h) but fewer: 5 < 6.
    t = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, rank_by="gpus")
    table = {("h100", 2): linear(20, 0.01), ("a100", 1): linear(10, 0.01)}
    plan = plan_traffic([candidate("h100", 2, 100), candidate("a100", 1, 500)], t, by_table(table))
    assert plan.chosen is not None and plan.chosen.gpu == "a100"


def test_limits_no_option_meets_answer_why_each_fails_not_an_error() -> None:
    t = Traffic(requests_per_s=1, input_tokens=100, output_tokens=100, ttft_s=0.05)
    down = Shortfall(code="does_not_start", field="tensor_parallel", message="TP1 on B: no KV")
    cands = [candidate("a", 1, 100), candidate("b", 1, 100, failure=down)]
    plan = plan_traffic(cands, t, by_table({("a", 1): linear(10, 0.01, 0, 0.2)}))
    assert not plan.feasible and plan.chosen is None
    assert sorted(plan.why_not_cheaper) == [
        "TP1 on A: TTFT 200 ms > 50 ms at the lightest load",
        "TP1 on B: no KV",
    ]
    assert all(o.failures for o in plan.options)


def test_unpriced_gpus_rank_after_the_priced_and_are_listed() -> None:
    # The unpriced GPU needs 5 GPUs, the priced one 10: by hourly cost the priced one wins.
    table = {("cheap", 1): linear(10, 0.01), ("priced", 1): linear(5, 0.01)}
    plan = plan_traffic([candidate("cheap", 1), candidate("priced", 1, 900)], T, by_table(table))
    assert plan.chosen is not None and plan.chosen.gpu == "priced"
    assert plan.unpriced_gpus == ["cheap"]
    assert plan.options[1].cost is None


def test_the_kv_pool_too_small_for_one_request_is_a_reason_not_an_error() -> None:
    # Through the real open loop: a one-token pool holds no request of 100 + 100 tokens.
    costs = StepCosts(
        tensor_parallel=1,
        layers=1,
        hidden_size=1,
        dense_weight_bytes=0,
        flops_per_token=0,
        attention_flops_per_context_token=0,
        kv_bytes_per_token=0,
        peak_flops_per_s=1e15,
        hbm_bytes_per_s=1e12,
    )
    eff = Efficiency(
        flops_fraction=1, bandwidth_fraction=1, step_overhead_s=0.01, allreduce_latency_s=0
    )
    small = EngineLimits(max_num_seqs=8, max_num_batched_tokens=8192, kv_pool_tokens=1)
    c = Candidate(
        gpu="g", tensor_parallel=1, replica=ReplicaModel(costs=costs, efficiency=eff, limits=small)
    )
    o = plan_option(c, T)
    assert not o.feasible
    assert o.failures[0].code == "kv_capacity"


def test_through_the_open_loop_the_replicas_serve_the_rate() -> None:
    # Relations only (the loop's own figures are its tests'): replicas x load = the rate, the
    # load at most the most a replica takes, and that at most 90% of its capacity.
    costs = StepCosts(
        tensor_parallel=1,
        layers=1,
        hidden_size=1,
        dense_weight_bytes=0,
        flops_per_token=0,
        attention_flops_per_context_token=0,
        kv_bytes_per_token=0,
        peak_flops_per_s=1e15,
        hbm_bytes_per_s=1e12,
    )
    eff = Efficiency(
        flops_fraction=1, bandwidth_fraction=1, step_overhead_s=0.01, allreduce_latency_s=0
    )
    limits = EngineLimits(max_num_seqs=10, max_num_batched_tokens=8192, kv_pool_tokens=10**9)
    c = Candidate(
        gpu="g", tensor_parallel=1, replica=ReplicaModel(costs=costs, efficiency=eff, limits=limits)
    )
    o = plan_option(c, T)
    assert o.feasible and o.replicas is not None
    assert o.requests_per_s_per_replica is not None
    assert o.max_requests_per_s_per_replica is not None
    assert o.capacity_requests_per_s_per_replica is not None
    assert o.replicas * o.requests_per_s_per_replica == pytest.approx(40)
    assert o.requests_per_s_per_replica <= o.max_requests_per_s_per_replica
    assert o.max_requests_per_s_per_replica <= 0.9 * o.capacity_requests_per_s_per_replica + 1e-9


def test_cost_needs_an_hourly_price() -> None:
    assert traffic_cost(4, None, T) is None
    assert traffic_cost(4, GpuPrice(gpu="x", currency="USD", purchase_price_cents=1), T) is None


def test_bad_traffic_names_the_field() -> None:
    with pytest.raises(SizingError) as err:
        plan_traffic(
            [candidate("a", 1)], Traffic(requests_per_s=-1, input_tokens=1, output_tokens=1)
        )
    assert err.value.field == "traffic.requests_per_s"


def test_durations_read_in_ms_below_a_second() -> None:
    assert duration_text(0.071) == "71 ms"
    assert duration_text(0.0074) == "7.4 ms"
    assert duration_text(1.25) == "1.25 s"
    assert math.isclose(0.071 * 1000, 71)
