"""/healthz: the process answers. /readyz: the database answers and is migrated to head."""

import msgspec
from litestar import Request, get
from litestar.exceptions import ServiceUnavailableException

from service.api.problems import problems
from service.db import current_revision, head_revision


class Health(msgspec.Struct, frozen=True):
    status: str


class Readiness(msgspec.Struct, frozen=True):
    status: str
    revision: str


@get("/healthz", tags=["health"], summary="Process is up", responses=problems())
async def healthz() -> Health:
    return Health(status="ok")


@get(
    "/readyz",
    tags=["health"],
    summary="Database answers and is at the head migration",
    responses=problems(503),
)
async def readyz(request: Request) -> Readiness:  # type: ignore[type-arg]
    head = head_revision()
    try:
        revision = await current_revision(request.app.state.db_config.get_engine())
    except Exception as exc:  # any driver error means "not ready", never a 500
        raise ServiceUnavailableException(
            f"database does not answer: {type(exc).__name__}"
        ) from exc
    if revision != head:
        raise ServiceUnavailableException(f"database at revision {revision}, head is {head}")
    return Readiness(status="ready", revision=revision or "")


health_handlers = [healthz, readyz]
