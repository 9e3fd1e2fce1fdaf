"""README.md and the guides work on a fresh clone as written: their Python compiles (and the
client snippet runs against a real server), the commands name real files and subcommands from
the .venv that `make install` creates, and every path they link to is in this repository. The
README stays a front door: short, its links to docs/ resolving."""

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.__main__ import main
from service.db import migrate
from service.settings import Settings
from tests.loopback import served

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
API = ROOT / "docs" / "api.md"
GUIDES = [README, ROOT / "deploy" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GUIDES += sorted((ROOT / "docs" / "reference").glob("*.md"))
# Pages other branches are writing now; the README links to them already. Once a page exists
# its entry must go (test_pending_pages_are_still_pending fails until it does).
PENDING: set[str] = set()
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:service|tests|deploy|docs|migrations|bench|openapi|\.ci)/[\w./-]*)`")


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", path.read_text(), re.M | re.S)


def test_the_api_guide_has_python_and_every_python_block_compiles() -> None:
    blocks = [(guide, block) for guide in GUIDES for block in python_blocks(guide)]
    assert any(guide == API for guide, _ in blocks)
    for guide, block in blocks:
        compile(block, str(guide), "exec")  # a SyntaxError fails the test


def test_the_client_snippet_saved_as_a_file_runs_against_a_real_server(tmp_path: Path) -> None:
    # Llama 3.1 70B, bf16, 40 x 8,192 tokens on H100s: 141,107,412,992 + 107,374,182,400 B =
    # 248.5 GB; 3 H100s hold 204 GB (218.9 GB on the driver's capacity): 4 GPUs either way.
    (snippet,) = [b for b in python_blocks(API) if "PlannerClient" in b]
    url = f"sqlite+aiosqlite:///{tmp_path / 'planner.db'}"
    migrate(url)
    with served(Settings(database_url=url)) as base:
        script = tmp_path / "client.py"
        script.write_text(snippet.replace("http://127.0.0.1:8000", base))
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=60
        )
    assert done.returncode == 0, done.stderr
    plan, matrix, suggestions, tokens_per_s = done.stdout.splitlines()
    assert plan.split()[0] == "4" and int(plan.split()[1]) > 0
    assert int(matrix) >= 1
    assert "'h100-sxm'" in suggestions  # the closest slugs to h1000
    assert float(tokens_per_s) > 0


@pytest.mark.parametrize("guide", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=str)
def test_guide_commands_run_from_the_venv_and_name_real_subcommands(
    guide: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A fresh clone has no `service` on the system Python: `python -m service` there is a
    # ModuleNotFoundError. Every command runs from .venv (make install).
    text = guide.read_text()
    bare = [m.start() for m in re.finditer(r"python -m service", text)]
    assert all(text[max(0, i - 10) : i] == ".venv/bin/" for i in bare), guide.name
    for word in sorted(set(re.findall(r"\.venv/bin/python -m service ([a-z][\w-]*)", text))):
        with pytest.raises(SystemExit) as exited:
            main([word, "--help"])
        assert exited.value.code == 0, word
    capsys.readouterr()
    for script in re.findall(r"^\$ (?:\S+=\S+ )*\./(\S+)", text, re.M):
        assert (ROOT / script).is_file(), f"{guide.name} runs ./{script}, which is not shipped"


def test_the_readme_and_the_api_guide_show_the_cli() -> None:
    assert ".venv/bin/python -m service" in README.read_text()
    assert ".venv/bin/python -m service plan" in API.read_text()


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_linked_path_is_in_this_repository(guide: Path) -> None:
    text = guide.read_text()
    assert "../shared" not in text and "/work/shared" not in text
    assert not re.search(r"\bDESIGN\.md\b", text)  # the design lives in docs/design.md
    targets = [t for t in LINK.findall(text) if not re.match(r"(https?:|mailto:|#)", t)]
    for target in targets:
        path = (guide.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT), f"{target} points outside the repository"
        if str(path.relative_to(ROOT)) in PENDING:
            continue
        assert path.exists(), f"{guide.name} links to {target}, which does not exist"
    for named in REPO_PATH.findall(text):
        assert (ROOT / named).exists(), f"{guide.name} names {named}, which does not exist"


def test_the_reference_tables_the_guides_cite_are_shipped() -> None:
    for name in ("gpus.md", "gpus.json", "models.md", "models.json"):
        assert (ROOT / "docs" / "reference" / name).stat().st_size > 1000
    assert "(reference/models.json)" in (ROOT / "docs" / "catalogue.md").read_text()


def test_the_readme_is_a_front_door() -> None:
    # About 150 lines: what it is, run and test, three worked answers, where to read more.
    text = README.read_text()
    assert len(text.splitlines()) < 200
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings == [
        "Worked answers",
        "Is it fast enough? How many GPUs for this traffic?",
        "The page",
        "Where to read more",
    ]
    assert "make run" in text and "make test" in text


def test_every_docs_link_in_the_readme_is_a_file() -> None:
    text = README.read_text()
    targets = {t.split("#", 1)[0] for t in LINK.findall(text) if t.startswith("docs/")}
    assert {
        "docs/api.md",
        "docs/seed-method.md",
        "docs/vllm-method.md",
        "docs/accuracy.md",
    } <= targets
    assert {"docs/catalogue.md", "docs/operations.md", "docs/design.md"} <= targets
    assert targets >= PENDING
    for target in sorted(targets - PENDING):
        assert (ROOT / target).is_file(), f"README.md links to {target}, which is not a file"


def test_pending_pages_are_still_pending() -> None:
    # When another branch's page lands, its PENDING entry must go, so the link is checked.
    assert [page for page in sorted(PENDING) if (ROOT / page).exists()] == []


def test_the_readme_worked_answers_prose_is_what_the_server_answers(tmp_path: Path) -> None:
    # The curl lines under each worked answer are run by test_examples.py; this checks the
    # numbers the prose adds, each from the server, against the README's wording.
    url = f"sqlite+aiosqlite:///{tmp_path / 'planner.db'}"
    migrate(url)
    text = " ".join(README.read_text().split())
    seed = {"concurrency": 40, "context_tokens": 8192, "capacity_basis": "marketed"}
    with served(Settings(database_url=url)) as base, httpx.Client(base_url=base) as http:

        def plan(**body: object) -> dict[str, Any]:
            answer: dict[str, Any] = http.post("/plan", json=body, timeout=60).json()
            return answer

        # FP8 weights and KV: 70.55 GB + 40 x 8,192 x 163,840 B = 53.69 GB = 124.24 GB, over
        # 2 x 68 GB = 136 GB: 11.76 GB spare.
        fp8 = {"weight_format": "fp8", "kv_format": "fp8"}
        two = plan(model="llama-3.1-70b", gpu="h100", **seed, **fp8)
        assert (two["gpu_count"], round(two["spare_bytes"] / 1e9, 1)) == (2, 11.8)
        assert "FP8 weights and FP8 KV: 2 H100s, 11.8 GB spare" in text
        # One H200: 141 GB x 0.9 - 4 GB = 122.9 GB against 124.24 GB: 1.34 GB short.
        one = plan(model="llama-3.1-70b", gpu="h200", splits=[1], **seed, **fp8)
        assert one["status"] == "does_not_fit" and round(-one["spare_bytes"] / 1e9, 1) == 1.3
        need = (one["weights_bytes"] + one["kv_cache_bytes"]) / 1e9
        assert f"falls 1.3 GB short of that plan's {need:.1f} GB" in text
        # DeepSeek-V3 FP8 on 8 H100s: 673.15 GB / 8 = 84.1 GB a GPU against 68 GB; 16 fit.
        eight = plan(model="deepseek-v3", gpu="h100", splits=[8], capacity_basis="marketed")
        assert eight["status"] == "does_not_fit"
        assert f"{eight['per_gpu']['weights_bytes'] / 1e9:.1f} GB of weights a GPU" in text
        assert "84.1 GB of weights a GPU against 68 GB" in text
        sixteen = plan(model="deepseek-v3", gpu="h100", capacity_basis="marketed")
        assert (sixteen["gpu_count"], sixteen["pipeline_parallel"]) == (16, 2)
        assert "two servers (16 GPUs, 2 pipeline stages)" in text
