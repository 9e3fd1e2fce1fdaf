"""Every example the guides show that a test can run is run, against a real server on the shipped
catalogue, and must print what the guide says it prints: the README's worked answer, the API's
curl lines and the CLI's tables stay true as the code changes."""

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.__main__ import main
from service.db import migrate
from service.settings import Settings
from tests.docs.examples import Example, examples, jq, parse_curl, pipeline, runnable
from tests.loopback import served

ROOT = Path(__file__).resolve().parents[2]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SECRET = "readme-secret"  # what docs/api.md exports as SLACK_SIGNING_SECRET
EXAMPLES = [e for guide in GUIDES for e in examples(guide) if runnable(e)]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('examples') / 'planner.db'}"
    migrate(url)
    with served(Settings(database_url=url, slack_signing_secret=SECRET)) as served_url:
        yield served_url


def first_stage(
    example: Example,
    words: list[str],
    base: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    if runnable(example) == "curl":
        curl = parse_curl(words)
        answer = httpx.request(
            curl.method, base + curl.path, headers=curl.headers, content=curl.body, timeout=60
        )
        return answer.text
    args = [re.sub(r"^http://127\.0\.0\.1:\d+$", base, w) for w in words[3:]]
    if args[0] == "slack-ask":
        monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
        args += ["--url", base]
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    main(args)
    return capsys.readouterr().out


def then(stage: list[str], text: str) -> tuple[str, list[Any] | None]:
    """The next stage of the pipeline on ``text``: its output, and its values when it is jq -c."""
    name, *args = stage
    if name == "head":
        return "\n".join(text.splitlines()[: int(args[0].lstrip("-n"))]), None
    if name == "tail":
        return "\n".join(text.splitlines()[-int(args[0].lstrip("-n")) :]), None
    assert name == "jq" and args[0] in ("-c", "-r"), stage
    values = jq(args[1], json.loads(text))
    if args[0] == "-c":
        return "\n".join(json.dumps(v, separators=(",", ":")) for v in values), values
    return "\n".join(v if isinstance(v, str) else json.dumps(v) for v in values), None


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_the_example_prints_what_the_guide_shows(
    example: Example,
    base: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, *rest = pipeline(example.command)
    text = first_stage(example, first, base, capsys, monkeypatch)
    values = None
    for stage in rest:
        text, values = then(stage, text)
    if values is not None:  # JSON: compared as values, whatever jq's number formatting
        assert values == [json.loads(line) for line in example.output.splitlines()]
    elif example.output.startswith("{") and "\n" not in example.output:
        # A problem carries a request id, new for every request: the guides leave it out.
        answer = json.loads(text)
        answer.pop("request_id", None)
        assert answer == json.loads(example.output)
    else:
        assert text.rstrip("\n") == example.output


def _steady(text: str) -> str:
    """``text`` without what changes from run to run: request ids, times, curl's CRs."""
    text = re.sub(r',"request_id":"[0-9a-f]+"', "", text.replace("\r", ""))
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\+00:00", "<time>", text)


def test_the_saved_plan_walk_through_runs_as_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The walk-through keeps state (ids, versions, keys in shell variables), so it runs as one
    # bash session's lines, in order, on a fresh database, with the keys it names.
    if shutil.which("curl") is None:
        pytest.skip("the walk-through is curl lines; curl is not installed")
    walk = [e for e in examples(ROOT / "docs" / "api.md") if "$H" in e.command]
    assert len(walk) >= 15
    url = f"sqlite+aiosqlite:///{tmp_path / 'planner.db'}"
    migrate(url)
    monkeypatch.setenv("DATABASE_URL", url)
    keys = {}
    for name, role in (("alice", "planner"), ("bob", "reviewer"), ("rita", "reviewer")):
        main(["keys", "create", "--principal", name, "--role", role])
        keys[name.upper()] = capsys.readouterr().out.splitlines()[-1]
    with served(Settings(database_url=url)) as served_url:
        env = {**os.environ, **keys, "H": served_url}
        for example in walk:
            done = subprocess.run(
                ["bash", "-c", example.command], env=env, capture_output=True, text=True, timeout=60
            )
            assert _steady(done.stdout).rstrip("\n") == _steady(example.output), example.id


def test_the_readme_and_the_api_guide_show_examples_that_run() -> None:
    # The README's worked answer and the API guide's requests are run, not only shown.
    counts = {g.name: sum(1 for e in EXAMPLES if e.guide == g) for g in GUIDES}
    assert counts["README.md"] >= 1
    assert counts["api.md"] >= 10
    assert counts["catalogue.md"] >= 5


def test_the_example_reader_sees_a_changed_answer(tmp_path: Path) -> None:
    # The reader itself: a guide whose shown answer differs from the server's must not pass as
    # an example with no output or as one that is not run.
    guide = tmp_path / "guide.md"
    guide.write_text(
        "```\n$ curl -s localhost:8000/gpus/h100 \\\n    | jq -c '{slug}'\n"
        '{"slug":"h100-pcie"}\n```\n'
    )
    (example,) = examples(guide)
    assert runnable(example) == "curl"
    assert example.command == "curl -s localhost:8000/gpus/h100 | jq -c '{slug}'"
    assert example.output == '{"slug":"h100-pcie"}'
    assert jq("{slug}", {"slug": "h100-sxm", "x": 1}) == [{"slug": "h100-sxm"}]


def test_the_small_jq_reads_the_guides_filters() -> None:
    # Each filter shape the guides use, on a value whose answer is written out by hand.
    value = {
        "total": 2,
        "items": [{"slug": "a"}, {"slug": "b"}],
        "warnings": [{"code": "x"}, {"code": "y"}],
        "per_gpu": {"spare_bytes": 5, "weights_bytes": 7},
        "blocks": [{"text": {"text": "first"}}, {"text": {"text": "second"}}],
        "text": "t",
        "response_type": "in_channel",
    }
    assert jq("[.total, [.items[].slug]]", value) == [[2, ["a", "b"]]]
    assert jq("{total, warnings: [.warnings[].code]}", value) == [
        {"total": 2, "warnings": ["x", "y"]}
    ]
    assert jq("{per_gpu: {spare_bytes: .per_gpu.spare_bytes}}", value) == [
        {"per_gpu": {"spare_bytes": 5}}
    ]
    assert jq(".text, .blocks[1].text.text", value) == ["t", "second"]
    assert jq('.response_type + " | " + .text', value) == ["in_channel | t"]
    assert jq(".", value) == [value]
