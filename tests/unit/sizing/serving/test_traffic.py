"""Planning from traffic on synthetic replicas (tests/unit/sizing/serving/curves.py: TPOT and
TTFT linear in the running batch, the open loop's rate b / (output x TPOT)), with prices
constructed here, so every figure follows by hand."""

import pytest

from service.sizing.cost import GpuPrice
from service.sizing.errors import SizingError
from service.sizing.serving.curve import Curve
from service.sizing.serving.loop import EngineLimits
from service.sizing.serving.traffic import (
    Candidate,
    CurveFor,
    ReplicaModel,
    plan_option,
    plan_traffic,
    traffic_cost,
)
from service.sizing.serving.traffic_plan import Shortfall, Traffic, duration_text
from tests.unit.sizing.serving.curves import FREE as COSTS
from tests.unit.sizing.serving.curves import TEN_MS, linear


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


def by_table(table: dict[tuple[str, int], Curve]) -> CurveFor:
    return lambda c, _t: table[(c.gpu, c.tensor_parallel)]


# 40 requests/s of 100-token prompts and answers, no limits.
T = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100)
TPOT_50MS = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, tpot_s=0.05)


def test_replicas_cover_the_rate_and_the_headroom_is_what_is_left() -> None:
    # At most 10 sequences of flat 10 ms steps: capacity 10 / (100 x 0.01) = 10/s, planned at
    # 0.9 x 10 = 9/s. ceil(40 / 9) = 5 replicas of TP2 = 10 GPUs at 8/s each: headroom
    # 1 - 8 / 9 = 0.111, utilisation 0.8, a batch of 8 x 100 x 0.01 = 8.
    # Cost: 10 GPUs x 250 c/h = 2,500 c/h, x 730 h = 1,825,000 c a month; 40 x 100 x 3,600 =
    # 14.4 M output tokens an hour: 2,500 / 14.4 = 173.6 -> 174 c per million.
    o = plan_option(candidate("h100", 2, 250), T, by_table({("h100", 2): linear(10, 0.01)}))
    assert o.feasible
    assert (o.replicas, o.gpu_count, o.gpus_per_replica) == (5, 10, 2)
    assert o.requests_per_s_per_replica == pytest.approx(8)
    assert o.max_requests_per_s_per_replica == pytest.approx(9)
    assert o.headroom == pytest.approx(1 - 8 / 9)
    assert o.utilisation == pytest.approx(0.8)
    assert o.running_batch == pytest.approx(8)
    assert o.tpot_s == pytest.approx(0.01)
    assert o.limited_by == "utilisation"
    assert o.cost is not None
    assert o.cost.hourly_cost_cents == 2500
    assert o.cost.monthly_cost_cents == 1_825_000
    assert o.cost.cost_per_million_output_tokens_cents == 174


def test_an_exact_multiple_needs_no_extra_replica() -> None:
    # 9/s per replica, 36 requested: exactly 4 replicas at 9 each, no headroom left.
    t = Traffic(requests_per_s=36, input_tokens=100, output_tokens=100)
    o = plan_option(candidate("a", 1), t, by_table({("a", 1): linear(10, 0.01)}))
    assert o.replicas == 4
    assert o.headroom == pytest.approx(0, abs=1e-6)


def test_a_tpot_limit_sets_the_replicas() -> None:
    # TPOT = 0.03 + 0.002 b <= 0.05 -> b = 10, rate 10 / (100 x 0.05) = 2/s (capacity at 100
    # sequences: 100 / (100 x 0.23) = 4.35/s, x 0.9 = 3.9): 40 / 2 = 20 replicas.
    o = plan_option(
        candidate("a100", 1), TPOT_50MS, by_table({("a100", 1): linear(100, 0.03, 0.002)})
    )
    assert o.replicas == 20
    assert o.max_requests_per_s_per_replica == pytest.approx(2)
    assert o.limited_by == "tpot"
    assert o.tpot_s is not None and o.tpot_s <= 0.05 * (1 + 1e-6)


def test_the_cheapest_feasible_option_wins_and_each_cheaper_one_says_why() -> None:
    # 40 requests/s, TPOT <= 50 ms:
    # - L40S TP1, 100 c/h: TPOT 71 ms with no load: fails; one replica would cost 100 c/h;
    # - H100 TP1, 300 c/h: 10 sequences of 10 ms: 9/s, 5 replicas = 5 GPUs = 1,500 c/h;
    # - H100 TP2: 20 sequences: 18/s, 3 replicas = 6 GPUs = 1,800 c/h;
    # - A100 TP1, 200 c/h: 2/s (above), 20 replicas = 4,000 c/h.
    table = {
        ("l40s", 1): linear(100, 0.071),
        ("h100", 1): linear(10, 0.01),
        ("h100", 2): linear(20, 0.01),
        ("a100", 1): linear(100, 0.03, 0.002),
    }
    cands = [
        candidate("a100", 1, 200),
        candidate("h100", 2, 300),
        candidate("h100", 1, 300),
        candidate("l40s", 1, 100),
    ]
    plan = plan_traffic(cands, TPOT_50MS, by_table(table))
    assert plan.feasible and plan.chosen is not None
    assert (plan.chosen.gpu, plan.chosen.tensor_parallel, plan.chosen.gpu_count) == ("h100", 1, 5)
    assert [(o.gpu, o.tensor_parallel) for o in plan.options] == [
        ("l40s", 1),
        ("h100", 1),
        ("h100", 2),
        ("a100", 1),
    ]
    assert plan.why_not_cheaper == ["TP1 on L40S: TPOT 71 ms > 50 ms at the lightest load"]
    (miss,) = plan.options[0].failures
    assert (miss.code, miss.field, miss.limit_s) == ("tpot", "traffic.tpot_s", 0.05)
    assert miss.predicted_s == pytest.approx(0.071)
    a100 = plan.options[-1]
    assert a100.cost is not None and a100.cost.hourly_cost_cents == 4000


def test_ranked_by_gpus_the_fewest_gpus_win_whatever_they_cost() -> None:
    # H100 TP2: 18/s, 3 replicas = 6 GPUs at 100 c/h; A100 TP1: 9/s, 5 GPUs at 500 c/h.
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
    # Unpriced: 9/s, 5 GPUs; priced: 5 sequences, 4.5/s, 9 GPUs: by hourly cost the priced one
    # wins and the unpriced cannot beat it (it is not evaluated). Ranked by GPUs, both are,
    # and the unpriced one (5 GPUs) wins, named as unpriced.
    table = {("cheap", 1): linear(10, 0.01), ("priced", 1): linear(5, 0.01)}
    cands = [candidate("cheap", 1), candidate("priced", 1, 900)]
    plan = plan_traffic(cands, T, by_table(table))
    assert plan.chosen is not None and plan.chosen.gpu == "priced"
    assert plan.chosen.gpu_count == 9
    assert plan.skipped == ["TP1 on CHEAP"]
    by_gpus = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, rank_by="gpus")
    plan = plan_traffic(cands, by_gpus, by_table(table))
    assert plan.chosen is not None and plan.chosen.gpu == "cheap"
    assert plan.unpriced_gpus == ["cheap"] and plan.chosen.cost is None


def test_a_layout_whose_one_replica_ranks_after_the_best_is_not_evaluated() -> None:
    # TP1: 9/s per GPU, 5 GPUs. One TP8 replica is 8 GPUs > 5: it cannot win, and its curve is
    # never asked for (the table has none). TP4 (4 GPUs < 5) is: 18/s, 3 replicas, 12 GPUs.
    t = Traffic(requests_per_s=40, input_tokens=100, output_tokens=100, rank_by="gpus")
    table = {("h100", 1): linear(10, 0.01), ("h100", 4): linear(20, 0.01)}
    cands = [candidate("h100", 8), candidate("h100", 4), candidate("h100", 1)]
    plan = plan_traffic(cands, t, by_table(table))
    assert plan.chosen is not None and plan.chosen.gpu_count == 5
    assert plan.skipped == ["TP8 on H100"]
    assert [o.tensor_parallel for o in plan.options] == [1, 4]


def replica(limits: EngineLimits) -> Candidate:
    return Candidate(
        gpu="g",
        tensor_parallel=1,
        replica=ReplicaModel(costs=COSTS, efficiency=TEN_MS, limits=limits),
    )


def test_the_kv_pool_too_small_for_one_request_is_a_reason_not_an_error() -> None:
    # Through the serving model's own curve: a one-token pool holds no 100 + 100 token request.
    small = EngineLimits(max_num_seqs=8, max_num_batched_tokens=8192, kv_pool_tokens=1)
    o = plan_option(replica(small), T)
    assert not o.feasible
    assert o.failures[0].code == "kv_capacity"


def test_through_the_open_loop_the_replicas_serve_the_rate() -> None:
    # Relations only (the loop's figures are its own tests'): replicas x load = the rate, the
    # load at most the most a replica takes, that at most 90% of its capacity.
    limits = EngineLimits(max_num_seqs=10, max_num_batched_tokens=8192, kv_pool_tokens=10**9)
    o = plan_option(replica(limits), T)
    assert o.feasible and o.replicas is not None
    assert o.requests_per_s_per_replica is not None
    assert o.max_requests_per_s_per_replica is not None
    assert o.capacity_requests_per_s_per_replica is not None
    assert o.replicas * o.requests_per_s_per_replica == pytest.approx(40)
    assert o.requests_per_s_per_replica <= o.max_requests_per_s_per_replica
    assert o.max_requests_per_s_per_replica <= 0.9 * o.capacity_requests_per_s_per_replica * (
        1 + 1e-6
    )


def test_cost_needs_an_hourly_price() -> None:
    assert traffic_cost(4, None, T) is None
    assert traffic_cost(4, GpuPrice(gpu="x", currency="USD", purchase_price_cents=1), T) is None


def test_bad_traffic_names_the_field() -> None:
    bad = Traffic(requests_per_s=-1, input_tokens=1, output_tokens=1)
    with pytest.raises(SizingError) as err:
        plan_traffic([candidate("a", 1)], bad)
    assert err.value.field == "traffic.requests_per_s"


def test_durations_read_in_ms_below_a_second() -> None:
    assert duration_text(0.071) == "71 ms"
    assert duration_text(0.0074) == "7.4 ms"
    assert duration_text(1.25) == "1.25 s"
