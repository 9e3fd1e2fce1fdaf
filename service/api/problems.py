"""RFC 9457 problem details for every error, and the OpenAPI entries that document them.

Shape (application/problem+json): ``type``, ``title``, ``status``, ``detail``, ``instance``, plus
``errors``: a list of {``field``, ``message``} naming the offending input (dotted for nesting,
e.g. ``model_spec.kv_heads``; a query or path parameter by its name), and ``suggestions``: the
closest known slugs when a slug is unknown or ambiguous (on a 406 or 415: the media types that
would do), and ``request_id``: the request's ``X-Request-ID`` (quote it when reporting a
problem; the log line of the request carries it). Inputs echoed back are cut (``echo``): a run
of more than 200 characters without a space keeps its first 200 and an ellipsis, and no text
is longer than 2,000 characters, so a 100 KB input never comes back as a 200 KB problem.

Status codes: 400 the request does not parse into the declared types or bounds; 422 it parses
but makes no sense (the sizing core or a catalogue check says why); 404 unknown slug or route;
406 Accept names nothing the endpoint serves; 409 duplicate slug or a row still in use; 401/403
auth; 413 body over the limit; 415 a body that is not JSON; 429 rate limit (Retry-After); 503
the database does not answer (Retry-After); 500 a bug.
"""

import logging
import re
from http import HTTPStatus
from typing import Any

from advanced_alchemy.exceptions import IntegrityError as RepositoryIntegrityError
from advanced_alchemy.exceptions import RepositoryError
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import IntegrityError as SQLAlchemyIntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from service.catalogue.errors import NotFound
from service.schemas.problem import FieldError, Problem
from service.sizing.errors import SizingError

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger("service.api")


class Conflict(Exception):
    """A write that would break a rule of the catalogue (duplicate slug, row still in use)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class ClientProblem(Exception):
    """A 4xx on one input: ``field`` names it, ``suggestions`` what would do instead."""

    def __init__(
        self,
        status: int,
        field: str,
        message: str,
        *,
        type_: str = "about:blank",
        suggestions: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message
        self.type_ = type_
        self.suggestions = suggestions or []


ECHO_RUN_CHARS = 200
ECHO_TEXT_CHARS = 2000
_LONG_RUN = re.compile(rf"\S{{{ECHO_RUN_CHARS + 1},}}")


def echo(text: str) -> str:
    """``text`` as a problem may carry it: runs without a space cut to ECHO_RUN_CHARS and the
    whole to ECHO_TEXT_CHARS, each cut marked with an ellipsis."""
    if len(text) <= ECHO_RUN_CHARS:
        return text
    text = _LONG_RUN.sub(lambda m: m[0][:ECHO_RUN_CHARS] + "\u2026", text)
    return text if len(text) <= ECHO_TEXT_CHARS else text[:ECHO_TEXT_CHARS] + "\u2026"


def make_problem(
    status: int,
    detail: str,
    instance: str,
    request_id: str,
    *,
    type_: str = "about:blank",
    errors: list[FieldError] | None = None,
    suggestions: list[str] | None = None,
) -> Problem:
    """The one place a Problem is built: every text in it that may echo an input is cut."""
    return Problem(
        type=type_,
        title=HTTPStatus(status).phrase,
        status=status,
        detail=echo(detail),
        instance=echo(instance),
        errors=[FieldError(echo(e.field), echo(e.message)) for e in errors or []],
        suggestions=[echo(s) for s in suggestions or []],
        request_id=request_id,
    )


def problem_response(
    request: Request[Any, Any, Any],
    status: int,
    detail: str = "",
    *,
    type_: str = "about:blank",
    errors: list[FieldError] | None = None,
    suggestions: list[str] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[Problem]:
    problem = make_problem(
        status,
        detail,
        request.url.path,
        str(request.scope.get("state", {}).get("request_id", "")),
        type_=type_,
        errors=errors,
        suggestions=suggestions,
    )
    return Response(problem, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _validation_errors(exc: ValidationException) -> list[FieldError]:
    """Litestar lists what failed to parse as {message, key, source}; keep key as the field."""
    errors = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            key = str(item.get("key") or item.get("source") or "body")
            message = str(item.get("message", ""))
            # msgspec names a missing or unknown field in the message, not in the path.
            named = _NAMED_FIELD.search(message)
            if named:
                key = named[1] if key in ("data", "body") else f"{key}.{named[1]}"
            errors.append(FieldError(field=key, message=message))
    return errors


_NAMED_FIELD = re.compile(r"(?:missing required|contains unknown) field `([^`]+)`")


def http_exception_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    status = exc.status_code
    errors = _validation_errors(exc) if isinstance(exc, ValidationException) else []
    if status >= 500:
        log.error("server error on %s %s: %s", request.method, request.url.path, exc.detail)
    return problem_response(
        request, status, str(exc.detail), errors=errors, headers=dict(exc.headers or {})
    )


def client_problem_handler(request: Request[Any, Any, Any], exc: ClientProblem) -> Response[Any]:
    return problem_response(
        request,
        exc.status,
        exc.message,
        type_=exc.type_,
        errors=[FieldError(exc.field, exc.message)],
        suggestions=exc.suggestions,
    )


def sizing_error_handler(request: Request[Any, Any, Any], exc: SizingError) -> Response[Any]:
    return problem_response(
        request,
        422,
        exc.message,
        type_="urn:gpu-planner:invalid-input",
        errors=[FieldError(exc.field, exc.message)],
    )


def not_found_handler(request: Request[Any, Any, Any], exc: NotFound) -> Response[Any]:
    return problem_response(
        request,
        exc.status,
        exc.message,
        type_="urn:gpu-planner:ambiguous-slug" if exc.ambiguous else "urn:gpu-planner:unknown-slug",
        errors=[FieldError(exc.field, exc.message)],
        suggestions=exc.suggestions,
    )


def conflict_handler(request: Request[Any, Any, Any], exc: Conflict) -> Response[Any]:
    return problem_response(
        request,
        409,
        exc.message,
        type_="urn:gpu-planner:conflict",
        errors=[FieldError(exc.field, exc.message)],
    )


def integrity_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # The checks in the controllers name the field; this catches what slips past them (a race
    # between two writers): the unique and foreign-key constraints still hold. advanced-alchemy
    # raises its IntegrityError for every driver error of a statement (a lost connection, a
    # timeout, a bad LIKE pattern): only a real constraint violation is a 409.
    if _caused_by(exc, SQLAlchemyIntegrityError):
        return problem_response(
            request,
            409,
            "the write conflicts with existing rows (duplicate slug or a row still in use)",
            type_="urn:gpu-planner:conflict",
        )
    return repository_error_handler(request, exc)


DATABASE_UNAVAILABLE = (OperationalError, InterfaceError, PoolTimeoutError, OSError)
"""The database is unreachable or too slow: connect, statement and pool timeouts, a lost
connection, the request's deadline (TimeoutError is an OSError)."""


def _caused_by(
    exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]
) -> bool:
    """``exc`` or an exception it was raised from is one of ``kinds``."""
    seen: BaseException | None = exc
    for _ in range(10):  # a chain is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, kinds):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def database_unavailable(exc: BaseException) -> bool:
    """A driver error that says "the database does not answer" (retry later), not "this
    statement is wrong"; an integrity violation never is."""
    if _caused_by(exc, SQLAlchemyIntegrityError):
        return False
    if _caused_by(exc, DATABASE_UNAVAILABLE):
        return True
    seen: BaseException | None = exc
    for _ in range(10):  # any other driver error that cost the connection
        if seen is None:
            return False
        if isinstance(seen, DBAPIError) and seen.connection_invalidated:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def database_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """The database is unreachable or too slow (connect/statement/pool timeouts): a 503 the
    client may retry (a POST /plans retry with its Idempotency-Key never makes a second plan)."""
    metrics = request.app.state.get("metrics")
    if metrics is not None:
        metrics.database_error("request")
    log.warning("database unavailable on %s %s: %r", request.method, request.url.path, exc)
    retry_after = str(request.app.state.settings.retry_after_s)
    return problem_response(
        request,
        503,
        "the database does not answer; nothing was saved, retry later",
        type_="urn:gpu-planner:database-unavailable",
        headers={"Retry-After": retry_after},
    )


def repository_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """advanced-alchemy wraps driver errors in RepositoryError: unwrap the unavailable ones."""
    if database_unavailable(exc):
        return database_error_handler(request, exc)
    return internal_error_handler(request, exc)


def internal_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(request, 500, "internal error; it has been logged")


EXCEPTION_HANDLERS: dict[type[Exception] | int, Any] = {
    HTTPException: http_exception_handler,
    ClientProblem: client_problem_handler,
    SizingError: sizing_error_handler,
    NotFound: not_found_handler,
    Conflict: conflict_handler,
    RepositoryIntegrityError: integrity_error_handler,
    SQLAlchemyIntegrityError: integrity_error_handler,
    OperationalError: database_error_handler,
    InterfaceError: database_error_handler,
    PoolTimeoutError: database_error_handler,
    TimeoutError: database_error_handler,
    DBAPIError: repository_error_handler,
    RepositoryError: repository_error_handler,
    Exception: internal_error_handler,
}

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects a JSON body may have (service/api/negotiation.py checks
it); every schema here needs under 10."""

DESCRIPTIONS = {
    400: "The request does not parse into the declared types or bounds; errors name the fields.",
    401: "No valid API key (Authorization: Bearer <key>).",
    403: "The key's role is too low for this operation.",
    404: "Unknown slug (suggestions lists the closest) or route.",
    406: "Accept names no media type this operation serves; suggestions lists those it does.",
    409: "Duplicate slug, or the row is still referenced.",
    413: "Request body larger than the limit.",
    415: "The body is not JSON (Content-Type must be application/json or a +json type).",
    422: "The input parses but is not consistent; errors name the fields.",
    429: "Rate limit for this API key (or client address) reached; Retry-After says when.",
    500: "Internal error (logged).",
    503: "The database does not answer, or not within the request's deadline (Retry-After says "
    "when to retry), or is not migrated.",
}


JSON_BODY_400 = (
    "The request does not parse into the declared types or bounds, or its JSON body nests deeper "
    f"than {MAX_JSON_DEPTH} levels or repeats a key in one object; errors name the fields."
)


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries documenting ``statuses`` as problem+json (plus 429, 500 and 503, always
    possible: the rate limit, a bug, the database gone)."""
    return {
        status: ResponseSpec(
            data_container=Problem,
            media_type=PROBLEM_JSON,
            description=DESCRIPTIONS[status],
            generate_examples=False,
        )
        for status in sorted({*statuses, 429, 500, 503})
    }


READ = (400, 401, 403, 404)
WRITE = (400, 401, 403, 404, 409, 413, 422)
