"""The client's errors: one PlannerError subclass per answer status, carrying the RFC 9457
problem, and the Retry-After rule. ``service.client`` re-exports every name here."""

import email.utils
import time

import httpx
import msgspec

from service.schemas.problem import Problem


class PlannerError(Exception):
    """An error answer (or no answer): ``status`` (0: unreachable) and the problem details."""

    def __init__(self, status: int, problem: Problem | None, text: str = "") -> None:
        self.status = status
        self.problem = problem
        self.text = text
        detail = problem.detail if problem is not None and problem.detail else text[:500]
        super().__init__(f"{status}: {detail}" if status else detail)

    @property
    def fields(self) -> list[str]:
        """The inputs the problem names (``errors[].field``)."""
        return [e.field for e in self.problem.errors] if self.problem else []


class BadRequest(PlannerError):
    """400: the request does not parse into the declared types and bounds."""


class Unauthorized(PlannerError):
    """401: no valid API key."""


class Forbidden(PlannerError):
    """403: the key's role is too low."""


class NotFound(PlannerError):
    """404: an unknown slug (``problem.suggestions``: the closest) or route."""


class Conflict(PlannerError):
    """409."""


class Unprocessable(PlannerError):
    """422: the input parses but is inconsistent."""


class RateLimited(PlannerError):
    """429, after the retries."""


class Unavailable(PlannerError):
    """503, after the retries."""


class ServerError(PlannerError):
    """Any other 5xx."""


class Unreachable(PlannerError):
    """No answer at all (connection refused, timeout)."""


ERRORS: dict[int, type[PlannerError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Unprocessable,
    429: RateLimited,
    503: Unavailable,
}


def error_for(response: httpx.Response) -> PlannerError:
    try:
        problem: Problem | None = msgspec.json.decode(response.content, type=Problem)
    except msgspec.DecodeError:
        problem = None
    status = response.status_code
    kind = ERRORS.get(status, ServerError if status >= 500 else PlannerError)
    return kind(status, problem, response.text)


def retry_after_s(response: httpx.Response, now: float | None = None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date; None when absent."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():  # float("²") raises though "²".isdigit()
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
