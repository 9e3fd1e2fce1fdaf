"""The accuracy report over the collected real start-up logs (service/accuracy.py).

The counts are what ``python -m service accuracy`` prints today; docs/accuracy.md is its
``--markdown`` page (tests/docs/test_accuracy_page.py keeps the two equal). The issue's bar: KV
tokens within 5% in >= 90% of the cases, weights within 1%, every logged failure predicted as a
failure.
"""

import json
import shutil
from pathlib import Path

from service.accuracy.vllm import CASES_DIR, render, report


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


def test_the_collected_cases_as_they_stand() -> None:
    # 120 cases (35 set a fitted constant; twelve V0 logs at TP 1 set V0's non-torch figure
    # together, as their median). Six are this project's own start-ups on an H200 with vLLM
    # 0.24.0 (h200own-*, held-out, each within 1%). KV tokens within 5%: 86 of 97 (88.7%;
    # held-out 58 of 66; 86 of 96 of the runs the method models), short of the issue's 90%.
    # The misses, each with its cause:
    # - dennislee A100 40GB x2 over Ray (two nodes, custom all-reduce off): +5.5%, ~0.6 GiB of
    #   non-torch memory beyond the single-node figure, not modelled;
    # - Qwen3-32B PP 2 on vLLM 0.27.1 (Model Runner V2): +16.8%, 1.3 GiB less than its TP 2
    #   twin with the same weights a GPU; pipeline overhead on V2 not modelled;
    # - Qwen3-0.6B on an RTX 4090 under 0.30 (a blog's summary, no total logged): +5.7%;
    # - DeepSeek-R1 on 8x H200, V0 0.7: its weights come out (83.76 against 83.88 GiB), but
    #   non-torch memory is 7.16 GiB at TP 8 (NCCL NVLS buffers, most likely) against 2.10;
    # - DeepSeek-V2-Lite pre-MLA: non-torch memory 5.21 GiB on one GPU (its page check
    #   passes);
    # - Phi-4 GPTQ at utilisation 0.15 (V0): weights and activation come out, its 0.26 GiB of
    #   non-torch memory against the median 0.09 is 8% of a 2.18 GiB cache;
    # - four AWQ runs on an RTX 5090 under 0.28 (+12% to +31%): a cold start there holds about
    #   1.4 GiB more outside torch than the method's figure (weights + non-torch 20.04 against
    #   18.62 GiB for the same model warm), whose source is not found;
    # - not modelled (1): Mixtral AWQ on vLLM 0.2.7 (before the modelled releases).
    # Qwen2.5-VL-7B with LoRA at TP 4 (V0 0.8.2) is predicted since the importer counts its
    # vision tower: 4,777,376 tokens against 4,917,360 (-2.8%, within 5%), weights 4.0205
    # against 4.0323 GiB (-0.3%) with the multimodal rotary cache's 4 x 128,000 rows.
    # The two bitsandbytes 4-bit runs under Unsloth (Llama 3.1 8B on 0.7.2, Qwen2.5-0.5B on
    # 0.10.0) come within 1.3% in tokens, with the utilisation Unsloth passed (its own
    # "actual GPU utilization = 59.59% / 78.28%" lines; vLLM prints it rounded).
    # Weights within 1%: 92 of 93; the miss is DeepSeek-R1-Distill-Qwen-14B at TP 2 on V0 0.7.2,
    # -1.2%, whose config is a reconstruction. Unsloth's Qwen2.5-0.5B bnb on 0.10.0 comes to
    # 0.5144 against 0.5151 GiB with the nested block scales its Unsloth release kept (2025.8.4
    # needs unsloth_zoo >= 2025.8.3, which overrides vLLM's dequantisation; fp32: +2.4%).
    # Failures: 16 of 19; the two gpt-oss-20b runs at utilisation 0.95 on vLLM 0.19 die
    # warming up the sampler after the KV cache is allocated, which the budget cannot see
    # (allocator fragmentation); DeepSeek-V2-Lite with --cpu-offload-gb 13 on V1 0.8.3 falls
    # 0.02 GiB short where the method leaves ~3 GiB (V1's profile brings an offloaded MoE layer
    # back and runs fused MoE over 8,192 tokens; its activation is modelled as the sampler).
    rep = report()
    measured = [r for r in rep.cases if r.inconsistent is None]
    assert len(rep.cases) == 120 and sum(r.role == "fit" for r in rep.cases) == 35
    assert (rep.tokens_within, rep.tokens_cases) == (86, 97)
    assert (rep.weights_within, rep.weights_cases) == (92, 93)
    assert {
        r.case for r in measured if r.weights_error is not None and abs(r.weights_error) > 0.01
    } == {
        "vllm-13061-rtx4090-x2-deepseek-r1-distill-qwen-14b-tp2-util0.98-131k-fails",
    }
    assert (rep.failures_ok, rep.failure_cases) == (16, 19)
    assert rep.false_failures == 0 and not rep.meets_bar
    # No way of counting put to the issue filer reaches 90%: without the one unsupported run
    # 86 of 96 (89.6%); held-out 58 of 66 (87.9%, the same with or without it).
    assert rep.tokens_by_counting == {
        "every case": (86, 97),
        "held-out": (58, 66),
        "modelled": (86, 96),
        "held-out modelled": (58, 66),
    }
    token_misses = {
        r.case for r in measured if r.tokens_error is not None and abs(r.tokens_error) > 0.05
    }
    not_modelled = {r.case for r in rep.cases if r.unsupported}
    assert not_modelled == {"vllm-2382-a100-mixtral-8x7b-awq-tp2-util0.5"}
    assert token_misses - not_modelled == {
        "dennislee-a100-40gb-x2-qwen2-7b-tp2-util0.5",
        "kubesimplify-rtxpro6000-qwen3-32b-pp2-util0.426",
        "vllmlearning-rtx4090-qwen3-0.6b-v0.30.0",
        "unknownrepo-h200x8-deepseek-r1-tp8-v0.7-128k",
        "vllm-pr10927-h100-deepseek-v2-lite-chat-pre-mla",
        "david-share-80gb-phi-4-autoround-gptq-4bit-util0.15-2k",
        "unknownrepo-rtx5090-qwen3-14b-awq-util0.7-16k",
        "unknownrepo-rtx5090-qwen3-14b-awq-util0.7-32k",
        "unknownrepo-rtx5090-qwen3-32b-awq-util0.7-8k-table",
        "unknownrepo-rtx5090-qwen3-32b-awq-util0.85-8k-table",
    }
    assert {r.case for r in measured if r.logged_failed and not r.failure_ok} == {
        "llmdplanner-h100-gpt-oss-20b-tp1-v0.19-sampler-oom-fails",
        "llmdplanner-h100-gpt-oss-20b-tp2-util0.95-v0.19-sampler-oom-fails",
        "vllm-15871-rtx3090-deepseek-v2-lite-chat-cpu-offload13-32k-eager-v0.8.3dev-fails",
    }
    assert {r.case for r in rep.cases if r.inconsistent} == {
        "kubesimplify-rtxpro6000-qwen3-235b-a22b-fp8-pp4",
        "llmd-h100-gpt-oss-120b",
        "llmdplanner-h100-codellama-34b-tp2-v0.19-gpu-contention-fails",
    }


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
