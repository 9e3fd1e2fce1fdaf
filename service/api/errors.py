"""Which exception answers which problem: one table (``PROBLEMS``), read by Litestar's
problem-details plugin (``PROBLEM_DETAILS``, installed by create_app).

Each entry turns an exception into a ``PlannerProblem``: the status, the detail, the ``type`` URN
and the fields it names. The plugin answers it through ``PlannerProblem.to_response``, the one
place that fills in the request's path and X-Request-ID (service.api.problems.problem_response
cuts every echoed text), logs a server error and counts and delays a database outage. A lookup
goes by the exception's class hierarchy, most specific first (Litestar's rule), so a subclass of
an entry answers as that entry.
"""

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from advanced_alchemy.exceptions import IntegrityError as RepositoryIntegrityError
from advanced_alchemy.exceptions import RepositoryError
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.plugins.problem_details import (
    ProblemDetailsConfig,
    ProblemDetailsException,
    ProblemDetailsPlugin,
)
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import IntegrityError as SQLAlchemyIntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from service.api.problems import ClientProblem, Conflict, problem_response
from service.catalogue.errors import NotFound
from service.plans.actions import IdempotencyMismatch
from service.plans.store import InvalidCursor, PlanNotFound
from service.plans.workflow import (
    IllegalTransition,
    NotPermitted,
    PreconditionFailed,
    PreconditionRequired,
)
from service.schemas.problem import FieldError
from service.sizing.errors import SizingError

log = logging.getLogger("service.api")


DATABASE_UNAVAILABLE = (OperationalError, InterfaceError, PoolTimeoutError, OSError)
"""The database is unreachable or too slow: connect, statement and pool timeouts, a lost
connection, the request's deadline (TimeoutError is an OSError)."""


def caused_by(
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
    if caused_by(exc, SQLAlchemyIntegrityError):
        return False
    if caused_by(exc, DATABASE_UNAVAILABLE):
        return True
    seen: BaseException | None = exc
    for _ in range(10):  # any other driver error that cost the connection
        if seen is None:
            return False
        if isinstance(seen, DBAPIError) and seen.connection_invalidated:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


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

Logged = Literal["server_error", "unavailable", "internal"]


class PlannerProblem(ProblemDetailsException):
    """An error as the service answers it (RFC 9457, the body service.schemas.problem.Problem).

    ``logged``: what the answer also does: ``server_error`` logs the detail, ``internal`` logs
    the exception that caused it with its traceback, ``unavailable`` counts a database outage
    and says when to retry (Retry-After: the settings' retry_after_s)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        type_: str = "about:blank",
        errors: Sequence[FieldError] = (),
        suggestions: Sequence[str] = (),
        headers: dict[str, str] | None = None,
        logged: Logged | None = None,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(detail=detail, status_code=status, headers=headers, type_=type_)
        self.problem_detail = detail  # HTTPException swaps an empty detail for the phrase
        self.problem_type = type_
        self.errors = list(errors)
        self.suggestions = list(suggestions)
        self.logged = logged
        self.cause = cause

    def to_response(self, request: Request[Any, Any, Any]) -> Response[Any]:
        headers = dict(self.headers or {})
        where = (request.method, request.url.path)
        if self.logged == "server_error":
            log.error("server error on %s %s: %s", *where, self.problem_detail)
        elif self.logged == "internal":
            log.exception("unhandled error on %s %s", *where, exc_info=self.cause)
        elif self.logged == "unavailable":
            metrics = request.app.state.get("metrics")
            if metrics is not None:
                metrics.database_error("request")
            log.warning("database unavailable on %s %s: %r", *where, self.cause)
            headers["Retry-After"] = str(request.app.state.settings.retry_after_s)
        return problem_response(
            request,
            self.status_code,
            self.problem_detail,
            type_=self.problem_type,
            errors=self.errors,
            suggestions=self.suggestions,
            headers=headers or None,
        )


def _on(field: str, message: str) -> list[FieldError]:
    return [FieldError(field, message)]


def _http(exc: HTTPException) -> PlannerProblem:
    return PlannerProblem(
        exc.status_code,
        str(exc.detail),
        errors=_validation_errors(exc) if isinstance(exc, ValidationException) else [],
        headers=dict(exc.headers or {}),
        logged="server_error" if exc.status_code >= 500 else None,
    )


def _unavailable(exc: Exception) -> PlannerProblem:
    """The database is unreachable or too slow (connect/statement/pool timeouts): a 503 the
    client may retry (a POST /plans retry with its Idempotency-Key never makes a second plan)."""
    return PlannerProblem(
        503,
        "the database does not answer; nothing was saved, retry later",
        type_="urn:gpu-planner:database-unavailable",
        logged="unavailable",
        cause=exc,
    )


def _internal(exc: Exception) -> PlannerProblem:
    return PlannerProblem(500, "internal error; it has been logged", logged="internal", cause=exc)


def _driver_error(exc: Exception) -> PlannerProblem:
    """advanced-alchemy wraps driver errors in RepositoryError: unwrap the unavailable ones."""
    return _unavailable(exc) if database_unavailable(exc) else _internal(exc)


def _integrity(exc: Exception) -> PlannerProblem:
    # The checks in the controllers name the field; this catches what slips past them (a race
    # between two writers): the unique and foreign-key constraints still hold. advanced-alchemy
    # raises its IntegrityError for every driver error of a statement (a lost connection, a
    # timeout, a bad LIKE pattern): only a real constraint violation is a 409.
    if not caused_by(exc, SQLAlchemyIntegrityError):
        return _driver_error(exc)
    return PlannerProblem(
        409,
        "the write conflicts with existing rows (duplicate slug or a row still in use)",
        type_="urn:gpu-planner:conflict",
    )


INVALID_INPUT = "urn:gpu-planner:invalid-input"

PROBLEMS: dict[type[Exception], Callable[[Any], PlannerProblem]] = {
    HTTPException: _http,
    ClientProblem: lambda e: PlannerProblem(
        e.status,
        e.message,
        type_=e.type_,
        errors=_on(e.field, e.message),
        suggestions=e.suggestions,
    ),
    SizingError: lambda e: PlannerProblem(
        422, e.message, type_=INVALID_INPUT, errors=_on(e.field, e.message)
    ),
    NotFound: lambda e: PlannerProblem(
        e.status,
        e.message,
        type_="urn:gpu-planner:ambiguous-slug" if e.ambiguous else "urn:gpu-planner:unknown-slug",
        errors=_on(e.field, e.message),
        suggestions=e.suggestions,
    ),
    Conflict: lambda e: PlannerProblem(
        409, e.message, type_="urn:gpu-planner:conflict", errors=_on(e.field, e.message)
    ),
    # The saved plans' workflow (service.plans).
    PlanNotFound: lambda e: PlannerProblem(
        404, e.message, type_="urn:gpu-planner:unknown-plan", errors=_on("plan_id", e.message)
    ),
    IllegalTransition: lambda e: PlannerProblem(
        409,
        e.message,
        type_="urn:gpu-planner:illegal-transition",
        errors=_on("status", f"the plan is {e.current}"),
    ),
    NotPermitted: lambda e: PlannerProblem(403, e.message, type_=e.type_),
    PreconditionRequired: lambda e: PlannerProblem(
        428, e.message, type_="urn:gpu-planner:if-match-required", errors=_on("If-Match", "missing")
    ),
    PreconditionFailed: lambda e: PlannerProblem(
        412,
        e.message,
        type_="urn:gpu-planner:stale-version",
        errors=_on("If-Match", f"the current version is {e.current_version}"),
    ),
    IdempotencyMismatch: lambda e: PlannerProblem(
        422,
        e.message,
        type_="urn:gpu-planner:idempotency-key-reused",
        errors=_on("Idempotency-Key", e.message),
    ),
    # 422, not 400: the spec can only say "url-safe base64, at most 200 characters", so a
    # cursor that matches it parses (the contract test holds a schema-valid value to that).
    InvalidCursor: lambda e: PlannerProblem(
        422, e.message, type_=INVALID_INPUT, errors=_on(e.field, e.message)
    ),
    # The database.
    RepositoryIntegrityError: _integrity,
    SQLAlchemyIntegrityError: _integrity,
    OperationalError: _unavailable,
    InterfaceError: _unavailable,
    PoolTimeoutError: _unavailable,
    TimeoutError: _unavailable,
    DBAPIError: _driver_error,
    RepositoryError: _driver_error,
    Exception: _internal,
}

PROBLEM_DETAILS = ProblemDetailsPlugin(
    ProblemDetailsConfig(exception_to_problem_detail_map=PROBLEMS)
)
"""Every exception a request raises answers as problem details, by ``PROBLEMS``."""
