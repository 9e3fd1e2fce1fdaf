"""/healthz: the process answers. /readyz: the database answers and is migrated to head."""

import msgspec
from litestar import Request, Response, get
from litestar.exceptions import ServiceUnavailableException

from service.api.encoded import EncodedJson
from service.api.problems import problems
from service.db import current_revision, head_revision, within


class Health(msgspec.Struct, frozen=True):
    status: str


class Readiness(msgspec.Struct, frozen=True):
    status: str
    revision: str


def _retry_after(request: Request) -> dict[str, str]:  # type: ignore[type-arg]
    return {"Retry-After": str(request.app.state.settings.retry_after_s)}


_HEALTHY = msgspec.json.encode(Health(status="ok"))


@get("/healthz", tags=["health"], summary="Process is up", responses=problems())
async def healthz() -> Response[Health]:
    return EncodedJson(_HEALTHY)  # the same answer every time: encoded once


@get(
    "/readyz",
    tags=["health"],
    summary="Database answers and is at the head migration",
    responses=problems(503),
)
async def readyz(request: Request) -> Readiness:  # type: ignore[type-arg]
    head = head_revision()
    try:
        revision = await within(
            request.app.state.settings.db_readiness_timeout_s,
            current_revision(request.app.state.db_config.get_engine()),
        )
    except Exception as exc:  # any driver error means "not ready", never a 500
        metrics = request.app.state.get("metrics")
        if metrics is not None:
            metrics.database_error("readiness")
        raise ServiceUnavailableException(
            f"database does not answer: {type(exc).__name__}", headers=_retry_after(request)
        ) from exc
    if revision != head:
        raise ServiceUnavailableException(
            f"database at revision {revision}, head is {head}", headers=_retry_after(request)
        )
    return Readiness(status="ready", revision=revision or "")


health_handlers = [healthz, readyz]
