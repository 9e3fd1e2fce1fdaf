"""Who may do what: API keys (Authorization: Bearer <key>) and the role ladder.

``require_role(role)`` is a Litestar guard others reuse (saving plans: planner; reviewing:
reviewer; catalogue writes: admin). ``open_unless_required(role)`` guards reads and computations:
open unless REQUIRE_AUTH=true. The caller lands in ``request.state.principal``.
"""

from typing import Any

import msgspec
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers import BaseRouteHandler
from litestar.types import Guard

from service.auth import Role, find_key, role_rank

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="gpu-planner"'}


class Principal(msgspec.Struct, frozen=True):
    name: str
    role: str


async def authenticate(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    scheme, _, key = connection.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise NotAuthorizedException("an API key is required", headers=CHALLENGE)
    async with connection.app.state.db_config.get_session() as session:
        row = await find_key(session, key.strip())
    if row is None:
        raise NotAuthorizedException("the API key is not valid", headers=CHALLENGE)
    principal = Principal(name=row.principal, role=row.role)
    connection.state.principal = principal
    return principal


def require_role(role: Role, *, only_when_auth_required: bool = False) -> Guard:
    """A guard: 401 without a valid key, 403 when the key's role ranks below ``role``."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        if only_when_auth_required and not connection.app.state.settings.require_auth:
            return
        principal = await authenticate(connection)
        if role_rank(principal.role) < role_rank(role):
            raise PermissionDeniedException(f"needs the {role} role; this key is {principal.role}")

    return guard


def open_unless_required(role: Role = "viewer") -> Guard:
    return require_role(role, only_when_auth_required=True)
