"""The step-by-step benchmark, on steps whose time is only a fixed 10 ms (no weights, no FLOPs),
so every request's first token and end follow by hand from the scheduling rules."""

import pytest

from service.sizing.serving.simulate import (
    POLICIES,
    SHAREGPT_MAX_PROMPT,
    SHAREGPT_MAX_TOTAL,
    SHAREGPT_MIN,
    Outcome,
    lengths,
    simulate,
)
from tests.unit.sizing.serving.curves import FREE, TEN_MS


def run(
    requests: list[tuple[int, int]],
    *,
    engine: str = "vllm",
    budget: int = 8192,
    pool: int = 10**9,
    concurrency: int | None = None,
) -> Outcome:
    return simulate(
        FREE,
        TEN_MS,
        max_num_seqs=1024,
        token_budget=budget,
        kv_pool_tokens=pool,
        requests=requests,
        concurrency=concurrency,
        policy=POLICIES[engine],  # type: ignore[index]
    )


def test_vllm_chunks_the_prompts_behind_the_running_decodes() -> None:
    # Three 100-token prompts, 3 output tokens each, 150 tokens a step.
    # step 1 (10 ms): A's 100 + B's first 50; A's first token.
    # step 2 (20 ms): A decodes (1) + B's last 50 + C's first 99; B's first token.
    # step 3 (30 ms): A, B decode + C's last 1; C's first token; A's third: A ends.
    # step 4 (40 ms): B, C decode; B ends. step 5 (50 ms): C ends.
    # TTFT (10 + 20 + 30) / 3 = 20 ms; TPOT (30-10)/2 = (40-20)/2 = (50-30)/2 = 10 ms;
    # 9 tokens / 0.05 s = 180 tok/s.
    out = run([(100, 3)] * 3, budget=150)
    assert out.duration_s == pytest.approx(0.05)
    assert out.mean_ttft_s == pytest.approx(0.02)
    assert out.mean_tpot_s == pytest.approx(0.01)
    assert out.output_tokens_per_s == pytest.approx(180)


def test_a_closed_loop_sends_the_next_request_when_one_ends() -> None:
    # Four requests of 10 in / 3 out, two clients: A, B prefill in step 1 (10 ms) and end after
    # two decodes (30 ms); C, D are sent then, prefill at 40 ms and end at 60 ms. Every TTFT is
    # one step, 10 ms; 12 tokens / 0.06 s = 200 tok/s.
    out = run([(10, 3)] * 4, concurrency=2)
    assert out.duration_s == pytest.approx(0.06)
    assert out.mean_ttft_s == pytest.approx(0.01)
    assert out.output_tokens_per_s == pytest.approx(200)
    assert out.peak_running == 2


def test_vllm_preempts_the_latest_request_when_the_pool_runs_out() -> None:
    # Two 10-token prompts, 6 output tokens each, a 25-token pool.
    # step 1 (10 ms): both prefill (20 tokens held), first tokens. Steps 2-3 (30 ms): 24 held.
    # step 4 (40 ms): 26 > 25, so B (admitted last) is preempted with 4 tokens out; 13 held.
    # B's 14 tokens (prompt + its 4) do not fit beside A's 13: A decodes alone and ends after
    # steps 5-6 (60 ms, its 6th token). Step 7 (70 ms) re-prefills B's 14 and samples its 5th,
    # step 8 (80 ms) its 6th. TTFT 10 ms each; TPOT A (60-10)/5 = 10 ms, B (80-10)/5 = 14 ms,
    # mean 12 ms; 12 tokens / 0.08 s = 150 tok/s.
    out = run([(10, 6)] * 2, pool=25)
    assert out.preemptions == 1
    assert out.duration_s == pytest.approx(0.08)
    assert out.mean_ttft_s == pytest.approx(0.01)
    assert out.mean_tpot_s == pytest.approx(0.012)
    assert out.output_tokens_per_s == pytest.approx(150)


def test_tensorrt_llm_admits_only_what_the_pool_holds_to_the_end() -> None:
    # GUARANTEED_NO_EVICT: each request needs 10 + 6 = 16 of a 20-token pool, so B waits for A.
    # A: prefill 10 ms, five decodes, ends at 60 ms. B: prefill at 70 ms, ends at 120 ms.
    # TTFT (10 + 70) / 2 = 40 ms; TPOT 10 ms; no preemption.
    out = run([(10, 6)] * 2, engine="tensorrt-llm", pool=20)
    assert out.preemptions == 0
    assert out.duration_s == pytest.approx(0.12)
    assert out.mean_ttft_s == pytest.approx(0.04)
    assert out.mean_tpot_s == pytest.approx(0.01)


def test_sglang_runs_each_prefill_batch_before_any_decode() -> None:
    # Three 10-token prompts, 3 out, 10 prefill tokens a step: A, B, C prefill alone at 10, 20
    # and 30 ms (A's and B's decodes wait), then two decode steps end all three at 50 ms.
    # TTFT (10 + 20 + 30) / 3 = 20 ms; TPOT A (50-10)/2 = 20, B (50-20)/2 = 15, C (50-30)/2 =
    # 10 ms: mean 15 ms.
    out = run([(10, 3)] * 3, engine="sglang", budget=10)
    assert out.duration_s == pytest.approx(0.05)
    assert out.mean_ttft_s == pytest.approx(0.02)
    assert out.mean_tpot_s == pytest.approx(0.015)


def test_sharegpt_lengths_keep_the_runs_means_within_the_samplers_filter() -> None:
    pairs = lengths(1000, 217.4, 201.4, "sharegpt")
    ins, outs = [i for i, _ in pairs], [o for _, o in pairs]
    assert sum(ins) / 1000 == pytest.approx(217.4, rel=0.01)
    assert sum(outs) / 1000 == pytest.approx(201.4, rel=0.01)
    assert min(ins) >= SHAREGPT_MIN and max(ins) <= SHAREGPT_MAX_PROMPT
    assert min(outs) >= SHAREGPT_MIN and max(i + o for i, o in pairs) <= SHAREGPT_MAX_TOTAL
    assert lengths(3, 100.4, 50.6, "fixed") == [(100, 51)] * 3
