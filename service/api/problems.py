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

from litestar import Request, Response
from litestar.openapi.datastructures import ResponseSpec

from service.schemas.problem import FieldError, Problem

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
