"""The accuracy report over the collected real start-up logs (service/accuracy.py).

The counts are what ``python -m service accuracy`` prints today; README.md carries the same table
(a drift test keeps them equal). The issue's bar: KV tokens within 5% in >= 90% of the cases,
weights within 1%, every logged failure predicted as a failure.
"""

import json
import shutil
from pathlib import Path

from service.accuracy import CASES_DIR, TABLE_END, TABLE_START, render, report

README = Path(__file__).resolve().parents[2] / "README.md"


def _copy(tmp_path: Path, case: str, **logged: object) -> Path:
    data = json.loads((CASES_DIR / f"{case}.json").read_text())
    data["logged"].update(logged)
    (tmp_path / f"{case}.json").write_text(json.dumps(data))
    return tmp_path


def test_readme_table_is_the_current_report() -> None:
    # Regenerate with: python -m service accuracy --readme README.md
    text = README.read_text(encoding="utf-8")
    block = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert block == render(report()).strip()


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


def test_a_case_may_bring_its_own_config(tmp_path: Path) -> None:
    # Qwen3-0.6B is not in the catalogue: the case names configs/qwen3-0.6b.json, read
    # relative to the case's folder.
    shutil.copytree(CASES_DIR / "configs", tmp_path / "configs")
    _copy(tmp_path, "vllm-pr24577-a100-qwen3-0.6b-flashinfer-bf16kv")
    (case,) = report(tmp_path).cases
    assert case.unsupported is None and case.model == "Qwen/Qwen3-0.6B"
    assert case.logged_tokens == 652_144
