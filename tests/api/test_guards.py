"""The key verifier the rate limit and the guards share: valid keys are remembered briefly."""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

import service.api.guards
from service.api.errors import PROBLEMS
from service.api.guards import KeyVerifier, Principal, bearer_key


class _Row:
    principal, role = "alice", "planner"


async def test_a_valid_key_is_remembered_for_the_ttl_and_an_invalid_one_never(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked_up: list[str] = []

    async def find_key(session: Any, key: str) -> _Row | None:
        looked_up.append(key)
        return _Row() if key == "good" else None

    @contextlib.asynccontextmanager
    async def sessions() -> AsyncIterator[Any]:
        yield None

    monkeypatch.setattr(service.api.guards, "find_key", find_key)
    now = [100.0]
    verifier = KeyVerifier(sessions, ttl_s=10.0, clock=lambda: now[0])  # type: ignore[arg-type]
    alice = Principal(name="alice", role="planner")
    assert await verifier.verify("good") == alice
    now[0] = 109.9  # 9.9 s later: still within the 10 s
    assert (await verifier.verify("good"), verifier.cached("good")) == (alice, alice)
    assert [await verifier.verify("bad"), await verifier.verify("bad")] == [None, None]
    assert looked_up == ["good", "bad", "bad"]
    now[0] = 110.0  # 10 s after the lookup: asked again (an inactivated key stops here)
    assert verifier.cached("good") is None
    assert await verifier.verify("good") == alice
    assert looked_up == ["good", "bad", "bad", "good"]


def test_only_a_non_empty_bearer_credential_is_a_key() -> None:
    assert bearer_key("Bearer gcp_abc ") == "gcp_abc"
    assert bearer_key("bearer gcp_abc") == "gcp_abc"  # the scheme is case-insensitive
    assert bearer_key("Bearer  ") is None
    assert bearer_key("Basic dXNlcjpwdw==") is None
    assert bearer_key("") is None


async def test_a_lookup_that_never_answers_ends_at_the_timeout_as_a_timeout_error() -> None:
    # A frozen network: the session's lookup never returns. The verifier runs in the middleware,
    # outside the request's database deadline, so it carries its own bound (the app passes
    # DB_REQUEST_DEADLINE_S) and a TimeoutError is what the problem mapping answers 503 for.
    @contextlib.asynccontextmanager
    async def sessions() -> AsyncIterator[Any]:
        await asyncio.Event().wait()  # never set
        yield None

    verifier = KeyVerifier(sessions, timeout_s=0.05)  # type: ignore[arg-type]
    lookup = asyncio.ensure_future(verifier.verify("good"))
    # Waiting 30 s only keeps the test from hanging if the bound were missing: then the lookup
    # is still running, and the assertion fails.
    await asyncio.wait({lookup}, timeout=30)
    assert lookup.done(), "the lookup was not bounded"
    assert isinstance(lookup.exception(), TimeoutError)
    problem = PROBLEMS[TimeoutError](TimeoutError())
    assert (problem.status_code, problem.logged) == (503, "unavailable")  # + Retry-After
