"""python -m service slack-ask: the shipped signer, run against a real server on loopback that
checks the signature with the same secret (and refuses a wrong one)."""

import json
import shlex
from collections.abc import Iterator

import httpx
import pytest

from service.__main__ import main
from service.settings import Settings
from tests.loopback import served

SECRET = "readme-secret"


@pytest.fixture(scope="module")
def url(database_url: str) -> Iterator[str]:
    with served(Settings(database_url=database_url, slack_signing_secret=SECRET)) as base:
        yield base


def ask(url: str, text: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["slack-ask", text, "--url", url, *extra])
    return code, capsys.readouterr().out


def test_the_signer_gets_a_real_plan_from_the_server(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Llama 3.1 70B in bf16 for 40 x 8,192 tokens: 141,107,412,992 B of weights + 40 x 8,192 x
    # 327,680 B of KV = 248,481,595,392 B. Three H100s hold 3 x 68 GB = 204 GB (80 GB x 0.9 - 4
    # GB; or 3 x 72.97 GB = 218.9 GB on the driver's 85,520,809,984 B): too few; four do.
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    code, out = ask(url, "plan llama-3.1-70b on h100 bf16 40x8192", capsys)
    assert code == 0, out
    answer = json.loads(out)
    assert answer["response_type"] == "in_channel"
    assert answer["text"].startswith("*4 x H100 SXM 80GB* (h100-sxm), ")


def test_asking_the_same_thing_twice_is_two_requests_not_a_replay(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both in the same second: a random trigger_id keeps the two signatures apart.
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    first, second = ask(url, "gpus", capsys), ask(url, "gpus", capsys)
    assert first[0] == second[0] == 0
    assert (
        json.loads(first[1])["text"]
        == json.loads(second[1])["text"]
        == (
            "13 GPUs in the catalogue"  # 11 from 0002, GH200 from 0013, MI355X from 0014
        )
    )


def test_a_wrong_secret_is_refused_and_exits_1(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "not-the-servers-secret")
    code, out = ask(url, "gpus", capsys)
    assert code == 1
    assert json.loads(out)["type"] == "urn:gpu-planner:bad-slack-signature"


def test_without_the_secret_it_says_so_and_exits_2(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    assert main(["slack-ask", "gpus", "--url", url]) == 2
    assert "SLACK_SIGNING_SECRET" in capsys.readouterr().err


def test_the_curl_line_is_a_request_the_server_answers(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    code, out = ask(url, "help", capsys, "--curl")
    assert code == 0
    words = shlex.split(out)
    assert words[:5] == ["curl", "-s", "-X", "POST", f"{url}/chatops/slack"]
    headers = dict(words[i + 1].split(": ", 1) for i, word in enumerate(words) if word == "-H")
    body = words[words.index("--data-binary") + 1].encode()
    response = httpx.post(words[4], headers=headers, content=body)  # what curl would send
    assert response.status_code == 200, response.text
    assert response.json()["response_type"] == "ephemeral"  # help is for the asker only
