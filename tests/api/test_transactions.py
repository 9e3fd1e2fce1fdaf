"""The request's transaction and deadline (service/api/transactions.py): a request past its
deadline is a 503 with Retry-After and its transaction is thrown away, never committed; a
commit that fails is an error answer, never the 2xx the handler meant."""

import asyncio
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.cached_catalogue import paths_without_database
from service.api.transactions import RequestTransaction
from service.db import settle_abandoned
from tests.conftest import new_key
from tests.plans.support import body

KEY = "session"


class FakeSession:
    def __init__(self, *, used: bool = True) -> None:
        self.calls: list[str] = []
        self.used = used

    def in_transaction(self) -> bool:
        return self.used

    async def invalidate(self) -> None:
        self.calls.append("invalidate")

    async def commit(self) -> None:
        self.calls.append("commit")

    async def rollback(self) -> None:
        self.calls.append("rollback")

    async def close(self) -> None:
        self.calls.append("close")


def http_scope(path: str, session: FakeSession) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [],
        "state": {"request_id": "r-1"},
        "_aa_connection_state": {KEY: session},
    }


async def run(app: Any, scope: dict[str, Any], deadline_s: float) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    middleware = RequestTransaction(app, deadline_s=deadline_s, retry_after_s=7, session_key=KEY)
    await asyncio.wait_for(middleware(scope, receive, send), 30)  # a hang fails, not stalls
    return sent


async def test_a_request_past_its_deadline_is_503_and_its_transaction_thrown_away() -> None:
    session = FakeSession()
    cancelled = asyncio.Event()

    async def frozen(scope: Any, receive: Any, send: Any) -> None:
        try:
            await asyncio.Event().wait()  # a database call that never answers
        except asyncio.CancelledError:
            cancelled.set()
            raise

    sent = await run(frozen, http_scope("/plans", session), deadline_s=0.05)
    await settle_abandoned()
    start, answer = sent
    assert start["status"] == 503
    assert (b"retry-after", b"7") in start["headers"]
    assert (b"content-type", b"application/problem+json") in start["headers"]
    assert b'"type":"urn:gpu-planner:database-unavailable"' in answer["body"]
    assert b'"request_id":"r-1"' in answer["body"]
    assert cancelled.is_set()  # the abandoned work was cancelled ...
    assert session.calls == ["invalidate"]  # ... and its connection dropped, not committed


async def test_the_deadline_never_cuts_an_answer_that_has_started() -> None:
    session = FakeSession()

    async def slow_body(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(0.2)  # past the deadline, but the answer is already on its way
        await send({"type": "http.response.body", "body": b"done", "more_body": False})

    sent = await run(slow_body, http_scope("/plans", session), deadline_s=0.05)
    assert [m.get("status") or m.get("body") for m in sent] == [200, b"done"]
    assert session.calls == ["commit", "close"]  # committed before the answer started


async def test_a_session_the_request_never_used_is_neither_committed_nor_closed() -> None:
    """A computation served from the cached catalogue never begins a transaction: no commit,
    no rollback, no close (each is a round trip through SQLAlchemy's greenlet)."""
    session = FakeSession(used=False)

    async def answer(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})

    sent = await run(answer, http_scope("/plan", session), deadline_s=1)
    assert [m.get("status") or m.get("body") for m in sent] == [200, b"{}"]
    assert session.calls == []


async def test_a_commit_that_fails_is_a_503_not_a_201_and_saves_nothing(
    client: AsyncTestClient[Litestar], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    planner = {"Authorization": f"Bearer {await new_key(database_url, 'planner', 'cody')}"}
    real_commit = AsyncSession.commit

    async def lost_at_commit(self: AsyncSession) -> None:
        raise OperationalError("COMMIT", {}, ConnectionResetError("connection lost at commit"))

    monkeypatch.setattr(AsyncSession, "commit", lost_at_commit)
    response = await client.post("/plans", json=body("lost at commit"), headers=planner)
    monkeypatch.setattr(AsyncSession, "commit", real_commit)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"  # the default RETRY_AFTER_S
    assert response.json()["type"] == "urn:gpu-planner:database-unavailable"
    listed = (await client.get("/plans", headers=planner)).json()["items"]
    assert "lost at commit" not in [p["name"] for p in listed]


def test_only_the_sessionless_cached_computations_skip_the_deadline_task(
    client: AsyncTestClient[Litestar],
) -> None:
    """POST /plan and /verify read the cached catalogue and take no session: no deadline task.
    /matrix and /offload take one (unused while the cache serves), so they keep theirs."""
    app = client.app
    free = paths_without_database(app)
    assert {"/plan", "/verify"} <= free
    assert not free & {"/matrix", "/offload", "/plans", "/gpus", "/readyz"}  # sessions: watched
    transaction = app.asgi_handler.app  # type: ignore[attr-defined]
    assert transaction.unbounded_paths == free | {"/healthz", "/metrics"}
