"""Who may do what: API keys (Authorization: Bearer <key>) and the role ladder.

``require_role(role)`` is a Litestar guard others reuse (saving plans: planner; reviewing:
reviewer; catalogue writes: admin). ``open_unless_required(role)`` guards reads and computations:
open unless REQUIRE_AUTH=true. The caller lands in ``request.state.principal``.

A presented key is verified once per request, by RequestMiddleware (service/observability.py),
so the rate limit can key on the verified principal; the guards read its verdict from the
scope state. ``KeyVerifier`` remembers a valid key for ``KEY_CACHE_S`` seconds, so a busy key
costs one database lookup every few seconds, not one per request (an inactivated key keeps
working that long at most).
"""

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec
from litestar import Litestar
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers import BaseRouteHandler
from litestar.types import Guard
from sqlalchemy.ext.asyncio import AsyncSession

from service.auth import Role, find_key, hash_key, role_rank

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="gpu-planner"'}
KEY_CACHE_S = 10.0
# Where RequestMiddleware leaves its verdict in the scope state: the Principal, or why not.
PRINCIPAL, AUTH_FAILED, AUTH_ERROR = "principal", "auth_failed", "auth_error"


class Principal(msgspec.Struct, frozen=True):
    name: str
    role: str


def bearer_key(authorization: str) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, else None."""
    scheme, _, key = authorization.partition(" ")
    return (key.strip() or None) if scheme.lower() == "bearer" else None


class KeyVerifier:
    """Looks keys up in the database and remembers the valid ones for ``ttl_s`` seconds."""

    MAX_KEYS = 10_000

    def __init__(
        self,
        sessions: Callable[[], AbstractAsyncContextManager[AsyncSession]],
        ttl_s: float = KEY_CACHE_S,
        clock: Callable[[], float] = time.monotonic,
        timeout_s: float | None = None,
    ) -> None:
        self._sessions = sessions
        # The lookup runs in the middleware, outside the request's database deadline
        # (service/api/transactions.py): a frozen network must not hold it longer.
        self._timeout_s = timeout_s
        self._ttl_s = ttl_s
        self._clock = clock
        self._valid: dict[str, tuple[Principal, float]] = {}

    def cached(self, key: str) -> Principal | None:
        """The principal of a key verified less than ``ttl_s`` ago (no database lookup)."""
        hit = self._valid.get(hash_key(key))
        return hit[0] if hit is not None and hit[1] > self._clock() else None

    async def verify(self, key: str) -> Principal | None:
        """The key's principal, None when no active key matches; database errors propagate."""
        if (principal := self.cached(key)) is not None:
            return principal
        async with asyncio.timeout(self._timeout_s), self._sessions() as session:
            row = await find_key(session, key)  # TimeoutError past timeout_s: a 503
        if row is None:
            return None
        now = self._clock()
        if len(self._valid) >= self.MAX_KEYS:
            self._valid = {k: v for k, v in self._valid.items() if v[1] > now}
            if len(self._valid) >= self.MAX_KEYS:
                self._valid.clear()
        principal = Principal(name=row.principal, role=row.role)
        self._valid[hash_key(key)] = (principal, now + self._ttl_s)
        return principal


async def authenticate(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    key = bearer_key(connection.headers.get("authorization", ""))
    if key is None:
        raise NotAuthorizedException("an API key is required", headers=CHALLENGE)
    state = connection.scope.get("state", {})
    principal = state.get(PRINCIPAL)
    if AUTH_ERROR in state:  # the middleware could not reach the database: 503, not 401
        raise state[AUTH_ERROR]
    if principal is None and not state.get(AUTH_FAILED):
        principal = await connection.app.state.key_verifier.verify(key)  # no middleware verdict
    if principal is None:
        raise NotAuthorizedException("the API key is not valid", headers=CHALLENGE)
    connection.state.principal = principal
    return principal  # type: ignore[no-any-return]


def require_role(role: Role, *, only_when_auth_required: bool = False) -> Guard:
    """A guard: 401 without a valid key, 403 when the key's role ranks below ``role``."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        if only_when_auth_required and not connection.app.state.settings.require_auth:
            return
        principal = await authenticate(connection)
        if role_rank(principal.role) < role_rank(role):
            raise PermissionDeniedException(f"needs the {role} role; this key is {principal.role}")

    return guard


OPEN_GUARD = "planner_open_unless_required"
"""Marks the guards of ``open_unless_required``: with REQUIRE_AUTH=false they let everyone in."""


def open_unless_required(role: Role = "viewer") -> Guard:
    guard = require_role(role, only_when_auth_required=True)
    setattr(guard, OPEN_GUARD, True)
    return guard


def drop_open_guards(app: Litestar) -> None:
    """With REQUIRE_AUTH=false, take the ``open_unless_required`` guards off this app's handlers
    (Litestar copies them per app): each would let every request in, but Litestar copies the
    handler for every guard it calls, on every request. A key presented anyway is still
    verified by RequestMiddleware (for the rate limit and the log)."""
    if app.state.settings.require_auth:
        return
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            guards = handler.resolve_guards()
            kept = [g for g in guards if not getattr(g, OPEN_GUARD, False)]
            if len(kept) != len(guards):
                handler._resolved_guards = kept  # what resolve_guards() answers from now on
