"""The RFC 9457 problem every error answer carries (application/problem+json): its fields are
described in service.api.problems, which builds them; the client decodes the same Struct."""

import msgspec


class FieldError(msgspec.Struct, frozen=True):
    field: str
    message: str


class Problem(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    type: str
    title: str
    status: int
    detail: str = ""
    instance: str = ""
    errors: list[FieldError] = []
    suggestions: list[str] = []
    request_id: str = ""
    """The request's X-Request-ID (also in its response header and its log line)."""
