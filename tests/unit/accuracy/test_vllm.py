"""The accuracy report over the collected real start-up logs (service/accuracy/vllm.py).

Each prediction is checked against what its log printed (the measured token count, weights and
failure), every known miss named with its cause; docs/accuracy.md is the report's ``--markdown``
page (tests/docs/test_accuracy_page.py keeps the two equal). The issue's bar: KV tokens within 5%
in >= 90% of the cases, weights within 1%, every logged failure predicted as a failure.
"""

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from service.accuracy.vllm import (
    CASES_DIR,
    load_cases,
    predict_case,
    report,
)
from service.accuracy.vllm_report import render
from service.sizing.errors import SizingError
from service.sizing.units import GiB


def _copy(tmp_path: Path, case: str, **logged: object) -> Path:
    data = json.loads((CASES_DIR / f"{case}.json").read_text())
    data["logged"].update(logged)
    (tmp_path / f"{case}.json").write_text(json.dumps(data))
    return tmp_path


def test_page_arithmetic_matches_every_log_that_states_memory_and_tokens() -> None:
    # No fitted constant: the logged KV memory, cut into blocks of page x group size, gives the
    # logged tokens (to the rounding of the printed GiB) in every case that states both and
    # does not contradict itself.
    rep = report()
    checked = [r for r in rep.cases if r.page_ok is not None and r.inconsistent is None]
    assert len(checked) >= 30
    assert [r.case for r in checked if not r.page_ok] == []


def test_a_budget_that_does_not_add_up_is_outside_the_bar(tmp_path: Path) -> None:
    # llm-d's Llama 3.1 8B row with its KV memory changed to 45 GiB: 0.9 x 79.18 - 14.99 - 4.76
    # - 0.13 - 45 = +6.38 GiB unaccounted, so the row cannot be one run: listed, not measured.
    rep = report(_copy(tmp_path, "llmd-h100-llama-3.1-8b", kv_cache_gib=45.0, kv_tokens=None))
    (case,) = rep.cases
    assert case.inconsistent == "its budget terms miss its KV memory by +6.38 GiB"
    assert rep.tokens_cases == 0 and rep.weights_cases == 0


def test_a_release_before_0_5_counts_as_a_miss(tmp_path: Path) -> None:
    # The method models 0.5 on; an older log is reported and every check it logs is a miss.
    data = json.loads((CASES_DIR / "tokenkaki-a100-40gb-qwen3-8b.json").read_text())
    data["vllm_version"] = "0.2.7"
    (tmp_path / "old.json").write_text(json.dumps(data))
    rep = report(tmp_path)
    (case,) = rep.cases
    assert case.role == "unsupported" and case.unsupported is not None
    assert (rep.tokens_within, rep.tokens_cases) == (0, 1)
    assert (rep.weights_within, rep.weights_cases) == (0, 1)
    assert not rep.meets_bar


def test_the_bar_is_also_counted_each_way_put_to_the_issue_filer(tmp_path: Path) -> None:
    # Three cases: tokenkaki's A100 40GB Qwen3-8B on 0.9.2 (held-out, -0.2%), the same card on
    # 0.19.1 (fit, +0.1%), and a copy of the first relabelled vLLM 0.2.7 (unsupported: a miss).
    # Every case: 2 of 3; held-out: 1 of 1 (the unsupported copy is no longer held-out);
    # modelled: 2 of 2; held-out modelled: 1 of 1.
    for case in ("tokenkaki-a100-40gb-qwen3-8b", "tokenkaki-a100-40gb-qwen3-8b-v0.19.1"):
        shutil.copy(CASES_DIR / f"{case}.json", tmp_path / f"{case}.json")
    old = json.loads((CASES_DIR / "tokenkaki-a100-40gb-qwen3-8b.json").read_text())
    old["vllm_version"] = "0.2.7"
    (tmp_path / "old.json").write_text(json.dumps(old))
    rep = report(tmp_path)
    assert rep.tokens_by_counting == {
        "every case": (2, 3),
        "held-out": (1, 1),
        "modelled": (2, 2),
        "held-out modelled": (1, 1),
    }
    assert (rep.tokens_within, rep.tokens_cases) == rep.tokens_by_counting["every case"]
    assert "every case 2/3 (66.7%); held-out 1/1 (100.0%)" in render(rep)


def test_a_case_may_bring_its_own_config(tmp_path: Path) -> None:
    # Qwen3-0.6B is not in the catalogue: the case names configs/qwen3-0.6b.json, read
    # relative to the case's folder.
    shutil.copytree(CASES_DIR / "configs", tmp_path / "configs")
    _copy(tmp_path, "vllm-pr24577-a100-qwen3-0.6b-flashinfer-bf16kv")
    (case,) = report(tmp_path).cases
    assert case.unsupported is None and case.model == "Qwen/Qwen3-0.6B"
    assert case.logged_tokens == 652_144


# What this project's own start-ups on an H200 with vLLM 0.24.0 printed ("GPU KV cache size: N
# tokens", "Model loading took W GiB"), copied from their logs: measured, not computed.
OWN_H200_LOGGED = {
    "h200own-vllm0.24.0-deepseek-v2-lite": (3_362_752, 29.32),
    "h200own-vllm0.24.0-gemma-3-27b-text": (531_880, 50.74),
    "h200own-vllm0.24.0-llama-3.1-8b": (914_304, 15.0),
    "h200own-vllm0.24.0-qwen3-0.6b-cold": (1_182_768, 1.12),
    "h200own-vllm0.24.0-qwen3-0.6b-warm": (1_182_768, 1.12),
    "h200own-vllm0.24.0-qwen3-30b-a3b": (738_288, 56.93),
}

# The runs the method misses by more than 5% in KV tokens, each with its cause:
TOKEN_MISSES = {
    # A100 40GB x2 over Ray (two nodes, custom all-reduce off): ~0.6 GiB of non-torch memory
    # beyond the single-node figure, not modelled.
    "dennislee-a100-40gb-x2-qwen2-7b-tp2-util0.5",
    # Qwen3-32B PP 2 on vLLM 0.27.1 (Model Runner V2): 1.3 GiB less than its TP 2 twin with
    # the same weights a GPU; pipeline overhead on V2 not modelled.
    "kubesimplify-rtxpro6000-qwen3-32b-pp2-util0.426",
    # Qwen3-0.6B on an RTX 4090 under 0.30: a blog's summary, no total logged.
    "vllmlearning-rtx4090-qwen3-0.6b-v0.30.0",
    # DeepSeek-R1 on 8x H200, V0 0.7: non-torch memory 7.16 GiB at TP 8 (NCCL NVLS buffers,
    # most likely) against 2.10.
    "unknownrepo-h200x8-deepseek-r1-tp8-v0.7-128k",
    # DeepSeek-V2-Lite pre-MLA: non-torch memory 5.21 GiB on one GPU.
    "vllm-pr10927-h100-deepseek-v2-lite-chat-pre-mla",
    # Phi-4 GPTQ at utilisation 0.15 (V0): 0.26 GiB of non-torch memory against the median
    # 0.09 is 8% of a 2.18 GiB cache.
    "david-share-80gb-phi-4-autoround-gptq-4bit-util0.15-2k",
    # Four AWQ runs on an RTX 5090 under 0.28: a cold start there holds about 1.4 GiB more
    # outside torch than the method's figure, whose source is not found.
    "unknownrepo-rtx5090-qwen3-14b-awq-util0.7-16k",
    "unknownrepo-rtx5090-qwen3-14b-awq-util0.7-32k",
    "unknownrepo-rtx5090-qwen3-32b-awq-util0.7-8k-table",
    "unknownrepo-rtx5090-qwen3-32b-awq-util0.85-8k-table",
}
# Weights beyond 1%: DeepSeek-R1-Distill-Qwen-14B at TP 2 on V0 0.7.2, whose config is a
# reconstruction.
WEIGHT_MISSES = {"vllm-13061-rtx4090-x2-deepseek-r1-distill-qwen-14b-tp2-util0.98-131k-fails"}
# Logged failures the budget cannot see: two gpt-oss-20b runs at 0.95 die warming up the
# sampler after the KV cache is allocated (allocator fragmentation); DeepSeek-V2-Lite with
# --cpu-offload-gb 13 on V1 0.8.3 falls 0.02 GiB short where the method leaves ~3 GiB.
FAILURE_MISSES = {
    "llmdplanner-h100-gpt-oss-20b-tp1-v0.19-sampler-oom-fails",
    "llmdplanner-h100-gpt-oss-20b-tp2-util0.95-v0.19-sampler-oom-fails",
    "vllm-15871-rtx3090-deepseek-v2-lite-chat-cpu-offload13-32k-eager-v0.8.3dev-fails",
}
NOT_MODELLED = {"vllm-2382-a100-mixtral-8x7b-awq-tp2-util0.5"}  # vLLM 0.2.7, before 0.5
INCONSISTENT = {  # budget lines that are not one run's: listed, never measured
    "kubesimplify-rtxpro6000-qwen3-235b-a22b-fp8-pp4",
    "llmd-h100-gpt-oss-120b",
    "llmdplanner-h100-codellama-34b-tp2-v0.19-gpu-contention-fails",
}


def _measured() -> list[dict[str, Any]]:
    return [c for c in load_cases() if c["id"] not in NOT_MODELLED | INCONSISTENT]


def test_the_projects_own_h200_start_ups_are_predicted_within_1_percent() -> None:
    # Llama 3.1 8B, the logged budget by hand: 0.92 x 139.8 GiB = 128.616 GiB, less its 17.01
    # GiB of non-KV memory = 111.61 GiB; 2 x 32 layers x 8 KV heads x 128 x 2 B = 128 KiB a
    # token, so 111.61 x 8,192 = 914,309 tokens, 57,144 whole blocks of 16 = 914,304 logged.
    cases = {c["id"]: c for c in load_cases()}
    for case_id, (tokens, weights_gib) in OWN_H200_LOGGED.items():
        p = predict_case(cases[case_id])
        assert abs(p.kv_cache_tokens / tokens - 1) <= 0.01, case_id
        assert abs(p.per_gpu.weights_bytes / GiB / weights_gib - 1) <= 0.01, case_id


def test_kv_tokens_come_within_5_percent_of_every_log_but_the_known_misses() -> None:
    # Against the token count each log prints (a case that logs none is not checked here).
    checked = 0
    for case in _measured():
        logged = case["logged"]
        if logged["failed"] or logged.get("kv_tokens") is None:
            continue
        error = predict_case(case).kv_cache_tokens / logged["kv_tokens"] - 1
        if case["id"] in TOKEN_MISSES:
            assert abs(error) > 0.05, (case["id"], error)  # a fixed miss leaves the list
        else:
            assert abs(error) <= 0.05, (case["id"], error)
        checked += 1
    assert checked >= 80  # of the 90 logs that print a token count


def test_weights_come_within_1_percent_of_every_log_but_one() -> None:
    # Against "Model loading took W GiB" (one rank's: the stage that printed it, if named).
    checked = 0
    for case in _measured():
        logged = case["logged"]
        if logged.get("weights_gib") is None:
            continue
        p = predict_case(case)
        stage = logged.get("weights_stage")
        weights = p.per_gpu.weights_bytes if stage is None else p.stage_weights_bytes[stage]
        error = weights / GiB / logged["weights_gib"] - 1
        assert (abs(error) > 0.01) == (case["id"] in WEIGHT_MISSES), (case["id"], error)
        checked += 1
    assert checked >= 90  # of the 95 logs that print it


def test_every_logged_failure_but_three_is_predicted_and_no_start_is_refused() -> None:
    for case in _measured():
        starts = predict_case(case).starts
        if case["logged"]["failed"]:
            assert starts == (case["id"] in FAILURE_MISSES), case["id"]
        else:
            assert starts, case["id"]


def test_a_release_before_the_modelled_ones_is_not_predicted() -> None:
    (case,) = [c for c in load_cases() if c["id"] in NOT_MODELLED]
    with pytest.raises((SizingError, LookupError)):
        predict_case(case)
    assert len(load_cases()) == 120  # the case files in tests/data/vllm_logs
    assert {r.case for r in report().cases if r.inconsistent} == INCONSISTENT


def test_held_out_kv_tokens_stay_within_5_percent_in_most_cases() -> None:
    # The cases no constant was fitted on: 58 of 66 within 5% (87.9%). A new miss among them
    # (or one fewer) changes this number, on purpose.
    rep = report()
    held_out = [
        r
        for r in rep.cases
        if r.role == "held-out" and r.inconsistent is None and r.tokens_error is not None
    ]
    within = sum(1 for r in held_out if abs(r.tokens_error or 0) <= 0.05)
    assert (within, len(held_out)) == (58, 66)
