"""A signed Slack request is answered once inside its 5-minute window: the same signature again is
refused (401), Slack's own retry (X-Slack-Retry-Num) gets the first answer without a second
computation, other valid requests still pass, and remembered signatures expire with the window
(a clock the tests move; nothing sleeps)."""

import asyncio
import time
import urllib.parse
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.chatops import run
from service.chatops.replay import ReplayGuard
from service.chatops.signature import sign
from service.chatops.slack import help_message
from service.settings import Settings

Client = AsyncTestClient[Litestar]
SECRET = "replay-test-secret"
FORM = {"content-type": "application/x-www-form-urlencoded"}


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def app(database_url: str) -> Litestar:
    return create_app(Settings(database_url=database_url, slack_signing_secret=SECRET))


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the handler actually computed an answer for."""
    texts: list[str] = []
    answer = run.answer

    async def counting(session: Any, text: str, *rest: Any) -> Any:
        texts.append(text)
        return await answer(session, text, *rest)

    monkeypatch.setattr(run, "answer", counting)
    return texts


def slash(text: str, trigger: str = "1") -> bytes:
    return urllib.parse.urlencode({"command": "/gpu", "text": text, "trigger_id": trigger}).encode()


def signed(body: bytes, timestamp: int | None = None, **extra: str) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        **FORM,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(SECRET, ts, body),
        **extra,
    }


async def post(client: Client, body: bytes, headers: dict[str, str]) -> Any:
    return await client.post("/chatops/slack", content=body, headers=headers)


async def test_a_replayed_signature_is_refused_inside_the_window(
    client: Client, computed: list[str]
) -> None:
    body = slash("gpus")
    headers = signed(body)
    statuses = [(await post(client, body, headers)).status_code for _ in range(3)]
    assert statuses == [200, 401, 401]  # the 3 of 3 accepted becomes 1 of 3
    replay = await post(client, body, headers)
    assert replay.headers["content-type"].startswith("application/problem+json")
    assert replay.json()["type"] == "urn:gpu-planner:replayed-slack-request"
    assert "WWW-Authenticate" in replay.headers
    assert computed == ["gpus"]  # nothing ran for the replays


async def test_slacks_retry_gets_the_first_answer_without_recomputing(
    client: Client, computed: list[str]
) -> None:
    body = slash("plan llama-3.1-70b on h100 bf16 40x8192")
    headers = signed(body)
    first = await post(client, body, headers)
    retries = [await post(client, body, {**headers, "X-Slack-Retry-Num": n}) for n in "12"]
    assert first.status_code == 200
    assert [r.status_code for r in retries] == [200, 200]
    assert all(r.content == first.content for r in retries)  # byte for byte
    assert computed == ["plan llama-3.1-70b on h100 bf16 40x8192"]  # once


async def test_a_retry_slack_signed_anew_finds_the_first_answer_by_its_body(
    client: Client, computed: list[str]
) -> None:
    body = slash("gpus")
    now = int(time.time())
    first = await post(client, body, signed(body, now - 3))
    retry = await post(client, body, signed(body, now, **{"X-Slack-Retry-Num": "1"}))
    assert retry.status_code == 200 and retry.content == first.content
    assert computed == ["gpus"]


async def test_other_valid_requests_are_still_answered(client: Client, computed: list[str]) -> None:
    now = int(time.time())
    first = slash("gpus", trigger="1")
    assert (await post(client, first, signed(first, now))).status_code == 200
    other_text = slash("models", trigger="2")  # another command, the same second
    assert (await post(client, other_text, signed(other_text, now))).status_code == 200
    again = slash("gpus", trigger="3")  # the same command typed again: a new request
    assert (await post(client, again, signed(again, now))).status_code == 200
    later = slash("gpus", trigger="1")  # the same body, signed a second later
    assert (await post(client, later, signed(later, now + 1))).status_code == 200
    assert computed == ["gpus", "models", "gpus", "gpus"]


async def test_a_remembered_signature_is_forgotten_when_its_timestamp_turns_stale(
    app: Litestar,
) -> None:
    # Signed at T; the window is 300 s either side: at T + 300 still inside (a replay), at
    # T + 301 stale (refused by the timestamp check) and no longer remembered.
    t = 1_700_000_000
    clock = Clock(t)
    app.state.slack_replays = guard = ReplayGuard(clock=clock)
    body = slash("help")
    async with AsyncTestClient(app=app) as client:
        assert (await post(client, body, signed(body, t))).status_code == 200
        assert len(guard) == 1
        clock.now = t + 300
        inside = await post(client, body, signed(body, t))
        assert inside.json()["type"] == "urn:gpu-planner:replayed-slack-request"
        clock.now = t + 301
        stale = await post(client, body, signed(body, t))
        assert stale.json()["type"] == "urn:gpu-planner:bad-slack-signature"
        other = slash("gpus")  # any later request sweeps the stale entry out
        assert (await post(client, other, signed(other, t + 301))).status_code == 200
    assert len(guard) == 1  # only the new one


async def test_expired_entries_go_and_the_count_is_bounded() -> None:
    clock = Clock(1000)
    guard = ReplayGuard(clock=clock, max_entries=2)
    assert guard.claim("1000", "v0=a", b"a", retry=False).verdict == "fresh"
    assert guard.claim("1000", "v0=a", b"a", retry=False).verdict == "replay"
    assert guard.claim("1000", "v0=b", b"b", retry=False).verdict == "fresh"
    assert guard.claim("1000", "v0=c", b"c", retry=False).verdict == "fresh"  # a goes: bound 2
    assert len(guard) == 2
    assert guard.claim("1000", "v0=a", b"a", retry=False).verdict == "fresh"  # forgotten
    clock.now = 1000 + 300 + 1  # every timestamp above is now stale: all expire
    assert guard.claim("1301", "v0=d", b"d", retry=False).verdict == "fresh"
    assert len(guard) == 1


async def test_a_retry_after_a_failed_first_attempt_is_computed() -> None:
    guard = ReplayGuard(clock=Clock(1000))
    first = guard.claim("1000", "v0=a", b"a", retry=False)
    guard.failed(first, RuntimeError("database gone"))
    assert len(guard) == 0
    again = guard.claim("1000", "v0=a", b"a", retry=True)
    assert again.verdict == "fresh"
    guard.answered(again, help_message())
    retry = guard.claim("1000", "v0=a", b"a", retry=True)
    assert retry.verdict == "retry" and await retry.stored() == help_message()


async def test_a_retry_while_the_first_attempt_runs_waits_for_its_answer() -> None:
    guard = ReplayGuard(clock=Clock(1000))
    first = guard.claim("1000", "v0=a", b"a", retry=False)
    retry = guard.claim("1000", "v0=a", b"a", retry=True)
    assert retry.verdict == "retry"
    waiting = asyncio.ensure_future(retry.stored())
    await asyncio.sleep(0)  # let it start waiting (no wall-clock wait: one loop turn)
    assert not waiting.done()
    guard.answered(first, help_message())
    assert await waiting == help_message()
