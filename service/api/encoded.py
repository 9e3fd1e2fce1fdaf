"""An answer whose JSON is already encoded, sent as Litestar's Response sends it.

Litestar turns a Response into an ASGIResponse on every request, and that one builds its two
headers through a mutable header mapping (a parse and an insert each): about as much CPU as a
seed plan's whole lookup. For encoded JSON bytes with nothing else to add (no route headers,
cookies, background task, HEAD, a 204 or 304), the same start and body messages are sent from
headers built as bytes; anything else goes Litestar's own way. A test compares the two, message
by message.
"""

from typing import Any

from litestar import Response
from litestar.datastructures import Cookie
from litestar.datastructures.headers import MutableScopeHeaders
from litestar.response.base import ASGIResponse

_JSON_TYPE = (b"content-type", b"application/json")
_NO_BODY = frozenset({204, 304})  # Litestar's own way: it refuses a body with these


class _EncodedASGI(ASGIResponse):
    """An ASGIResponse with its content-type and content-length given as bytes."""

    __slots__ = ()

    def __init__(self, body: bytes, status_code: int) -> None:
        self.headers = MutableScopeHeaders(
            {"headers": [_JSON_TYPE, (b"content-length", str(len(body)).encode())]}  # type: ignore[typeddict-item]
        )
        self.body = body
        self.content_length = len(body)
        self.status_code = status_code
        self.background = None
        self.is_head_response = False
        self.encoding = "utf-8"
        self._encoded_cookies = ()


class EncodedJson(Response[Any]):
    """``Response(body, media_type="application/json")`` for ``body``, JSON already encoded."""

    __slots__ = ()

    def __init__(self, body: bytes, status_code: int | None = None) -> None:
        # Response.__init__'s attributes for these arguments, set without its conversions.
        self.content = body
        self.background = None
        self.cookies = []
        self.encoding = "utf-8"
        self.headers = {}
        self.media_type = "application/json"
        self.status_code = status_code  # None: the route's (Response's rule)
        self.response_type_encoders = {}

    def to_asgi_response(  # type: ignore[override]
        self,
        app: Any,
        request: Any,
        *,
        background: Any = None,
        cookies: "list[Cookie] | None" = None,
        encoded_headers: Any = None,
        headers: "dict[str, str] | None" = None,
        is_head_response: bool = False,
        media_type: Any = None,
        status_code: int | None = None,
        type_encoders: Any = None,
    ) -> ASGIResponse:
        plain = not (
            background
            or cookies
            or encoded_headers
            or headers
            or is_head_response
            or self.background
            or self.cookies
            or self.headers
        )
        status = self.status_code or status_code or 200
        if plain and status not in _NO_BODY:
            return _EncodedASGI(self.content, status)
        return super().to_asgi_response(
            app,
            request,
            background=background,
            cookies=cookies,
            encoded_headers=encoded_headers,
            headers=headers,
            is_head_response=is_head_response,
            media_type=media_type,
            status_code=status_code,
            type_encoders=type_encoders,
        )
