"""The request's transaction and its deadline, around every HTTP request.

Transaction: the request's session (advanced-alchemy's ``db_session``) commits when the answer
is a 2xx and rolls back otherwise, just before the answer starts. A commit that fails replaces
the answer (503 when the database does not answer, else 500): advanced-alchemy's "autocommit"
handler logged the failure and sent the handler's 2xx anyway, and a before-send hook cannot
replace an answer that Litestar counts as started.

Deadline: every request answers within ``DB_REQUEST_DEADLINE_S``. A partition sends no error,
so the statement timeout (server side) and the TCP options (service.db) may not fire; past the
deadline the request's work is abandoned (cancelled in the background, its connection
invalidated once it has ended, its transaction never committed) and the answer is a 503
problem with Retry-After. Once the answer has started (after the commit) the deadline no longer
applies: what is left is sending the body.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable

import msgspec
from advanced_alchemy.extensions.litestar._utils import get_aa_scope_state
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.errors import database_unavailable
from service.api.problems import PROBLEM_JSON
from service.db import abandon
from service.schemas.problem import Problem

log = logging.getLogger("service.api")
UNBOUNDED_PATHS = frozenset({"/healthz", "/metrics"})
"""Never touch the database."""


class RequestTransaction:
    def __init__(
        self,
        app: ASGIApp,
        *,
        deadline_s: float,
        retry_after_s: int,
        session_key: str,
        on_database_error: Callable[[], None] | None = None,
        unbounded_paths: frozenset[str] = UNBOUNDED_PATHS,
    ) -> None:
        self.app = app
        self.unbounded_paths = unbounded_paths
        """Paths that never take the request's session: run without the deadline's watch task
        (a task and a timer per request) and without a transaction to end (no send wrapper)."""
        self.deadline_s = deadline_s
        self.retry_after_s = retry_after_s
        self.session_key = session_key
        self.on_database_error = on_database_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["path"] in self.unbounded_paths:
            await self.app(scope, receive, send)
            return
        answering = False  # the answer's first message has gone out
        replaced = False  # the commit failed: the handler's answer is dropped
        abandoned = False  # past the deadline: the 503 went out instead

        async def guarded_send(message: Message) -> None:
            nonlocal answering, replaced
            if abandoned or replaced:
                return
            if message["type"] == "http.response.start":
                failed = await self._end_transaction(scope, message["status"])
                if failed is not None:
                    replaced = True
                    await self._problem(scope, send, failed)
                    answering = True
                    return
            await send(message)
            answering = True

        if self.deadline_s <= 0:
            await self.app(scope, receive, guarded_send)
            return
        work = asyncio.ensure_future(self.app(scope, receive, guarded_send))
        try:
            done, _ = await asyncio.wait({work}, timeout=self.deadline_s)
        except BaseException:
            abandon(work)
            raise
        if done or answering:
            await work  # finished, or sending its body: the database's part is over
            return
        abandoned = True
        session: AsyncSession | None = get_aa_scope_state(scope, self.session_key, pop=True)
        # Once the work has ended, drop its connection without a round trip (a rollback would
        # wait on the network that is gone); the transaction was never committed.
        abandon(work, session.invalidate if session is not None else None)
        log.warning(
            "no answer within %g s on %s %s: abandoned, 503",
            self.deadline_s,
            scope.get("method", ""),
            scope["path"],
        )
        await self._problem(scope, send, TimeoutError())

    async def _end_transaction(self, scope: Scope, status: int) -> Exception | None:
        """Commit on 2xx, else roll back; then close. The commit's error, if it failed."""
        session: AsyncSession | None = get_aa_scope_state(scope, self.session_key, pop=True)
        if session is None or not session.in_transaction():
            return None  # never used (a computation served from the cached catalogue): no-op
        failed: Exception | None = None
        try:
            if 200 <= status < 300:
                await session.commit()
            else:
                await session.rollback()
        except Exception as exc:
            if 200 <= status < 300:
                failed = exc
                log.warning("commit failed on %s: %r", scope["path"], exc)
        with contextlib.suppress(Exception):  # a dead connection: nothing left to close
            await session.close()
        return failed

    async def _problem(self, scope: Scope, send: Send, exc: Exception) -> None:
        """503 + Retry-After when the database does not answer (the deadline, a lost
        connection at commit), else 500."""
        headers = [(b"content-type", PROBLEM_JSON.encode())]
        if isinstance(exc, TimeoutError) or database_unavailable(exc):
            if self.on_database_error is not None:
                self.on_database_error()
            status, title, type_ = (
                503,
                "Service Unavailable",
                "urn:gpu-planner:database-unavailable",
            )
            detail = (
                f"the database did not answer within {self.deadline_s:g} s"
                if isinstance(exc, TimeoutError)
                else "the database does not answer"
            ) + "; nothing was saved, retry later"
            headers.append((b"retry-after", str(self.retry_after_s).encode()))
        else:
            log.error("commit failed on %s", scope["path"], exc_info=exc)
            status, title, type_ = 500, "Internal Server Error", "about:blank"
            detail = "internal error; it has been logged"
        payload = msgspec.json.encode(
            Problem(
                type=type_,
                title=title,
                status=status,
                detail=detail,
                instance=scope["path"],
                request_id=str(scope.get("state", {}).get("request_id", "")),
            )
        )
        headers.append((b"content-length", str(len(payload)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload, "more_body": False})
