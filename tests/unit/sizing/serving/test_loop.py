"""The closed loop, the finite benchmark and the open loop, on steps whose time is only the fixed
overhead (no weights, no FLOPs), so every figure follows by hand."""

import msgspec
import pytest

from service.sizing.errors import SizingError
from service.sizing.serving.loop import (
    EngineLimits,
    Workload,
    benchmark,
    closed_loop,
    open_loop,
)
from tests.unit.sizing.serving.curves import FREE, TEN_MS


def limits(seqs: int = 1024, kv: int = 10**9, budget: int = 8192) -> EngineLimits:
    return EngineLimits(max_num_seqs=seqs, max_num_batched_tokens=budget, kv_pool_tokens=kv)


def test_the_kv_pool_caps_the_running_batch_and_the_rest_queue() -> None:
    # 32 clients, 500 in / 1,000 out: a request holds 500 + 1000 / 2 = 1,000 pool tokens on
    # average, so a 10,000-token pool runs 10. Steps of 10 ms: TPOT 10 ms, 10 / 0.01 = 1,000
    # tok/s, 1 request/s. The other 22 wait 22 x 1,000 / 1,000 = 22 s, then one 10 ms prefill.
    w = Workload(input_tokens=500, output_tokens=1000, concurrency=32)
    p = closed_loop(FREE, TEN_MS, limits(kv=10_000), w)
    assert p.running_batch == 10
    assert p.bottleneck == "kv-capacity"
    assert p.tpot_s == pytest.approx(0.01)
    assert p.output_tokens_per_s == pytest.approx(1000)
    assert p.requests_per_s == pytest.approx(1)
    assert p.total_tokens_per_s == pytest.approx(1500)
    assert p.ttft_s == pytest.approx(22.01)


def test_max_num_seqs_caps_the_batch_below_the_pool() -> None:
    w = Workload(input_tokens=500, output_tokens=1000, concurrency=32)
    p = closed_loop(FREE, TEN_MS, limits(seqs=8, kv=10_000), w)
    assert (p.running_batch, p.bottleneck) == (8, "max-num-seqs")


def test_a_pool_that_holds_no_request_is_refused_naming_the_field() -> None:
    w = Workload(input_tokens=500, output_tokens=1000, concurrency=1)
    with pytest.raises(SizingError) as err:
        closed_loop(FREE, TEN_MS, limits(kv=999), w)
    assert err.value.field == "kv_pool_tokens"


def test_a_burst_of_fixed_length_requests_is_one_prefill_then_their_decode() -> None:
    # 10 prompts of 100 tokens at once: 1,000 prompt tokens fit one step's budget (8,192), so
    # one 10 ms step prefills them all and samples each one's first token (TTFT 10 ms); 49
    # decode steps of 10 ms give the other 49 tokens: the run ends at 0.5 s, 500 tokens / 0.5 s
    # = 1,000 tok/s; TPOT (0.5 - 0.01) / 49 = 10 ms.
    w = Workload(input_tokens=100, output_tokens=50, num_prompts=10)
    p = benchmark(FREE, TEN_MS, limits(), w)
    assert p.duration_s == pytest.approx(0.5)
    assert p.output_tokens_per_s == pytest.approx(1000)
    assert p.ttft_s == pytest.approx(0.01)
    assert p.tpot_s == pytest.approx(0.01)


def test_an_open_loop_below_capacity_runs_rate_x_output_x_tpot_sequences() -> None:
    # A 10-sequence pool at 10 ms per step serves 10 / (0.01 x 100) = 10 requests/s of 100
    # tokens; at 5 requests/s the utilisation is 0.5 and 5 x 100 x 0.01 = 5 sequences run.
    w = Workload(input_tokens=100, output_tokens=100, request_rate_per_s=5)
    p = open_loop(FREE, TEN_MS, limits(seqs=10), w)
    assert p.utilisation == pytest.approx(0.5)
    assert p.running_batch == pytest.approx(5)
    assert p.output_tokens_per_s == pytest.approx(500)
    assert p.stable


def test_an_open_loop_past_capacity_is_unstable_with_no_finite_ttft() -> None:
    w = Workload(input_tokens=100, output_tokens=100, request_rate_per_s=20)
    p = open_loop(FREE, TEN_MS, limits(seqs=10), w)
    assert p.utilisation == pytest.approx(2)
    assert not p.stable
    assert p.ttft_s is None


def test_an_eager_prefill_costs_a_steady_step_its_share_of_one_prefill_batch() -> None:
    # 100 kernels launched at 100 us apiece outside a graph: 10 ms, against no GPU work, plus
    # the step's 10 ms on the host: a step with prompt tokens takes 20 ms eagerly, 10 ms in a
    # graph. 500 in / 100 out: 4 clients finish 4 / 100 = 0.04 requests a step, one prefill
    # batch every 25 steps: TPOT 10 + 0.04 x 10 = 10.4 ms. 200 clients finish 2 a step, a
    # prefill batch on every step: 20 ms. An engine that prefills in its graphs: 10 ms.
    eff = msgspec.structs.replace(TEN_MS, eager_kernel_overhead_s=100e-6)
    eager = msgspec.structs.replace(FREE, kernels=100, eager_prefill=True)
    few = Workload(input_tokens=500, output_tokens=100, concurrency=4)
    many = msgspec.structs.replace(few, concurrency=200)
    assert closed_loop(eager, eff, limits(), few).tpot_s == pytest.approx(0.0104)
    assert closed_loop(eager, eff, limits(), many).tpot_s == pytest.approx(0.02)
    graph = msgspec.structs.replace(eager, eager_prefill=False)
    assert closed_loop(graph, eff, limits(), many).tpot_s == pytest.approx(0.01)
