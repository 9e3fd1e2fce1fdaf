"""EncodedJson sends what Litestar's own Response sends for the same JSON bytes, message by
message, and goes Litestar's own way whenever anything else is added to the answer."""

from typing import Any

import pytest
from litestar import Litestar, Response, get, post
from litestar.datastructures import Cookie, ResponseHeader

from service.api.encoded import EncodedJson

BODY = b'{"model":"llama-3.1-70b","gpu_count":4,"note":"\xc3\xa9"}'


def _app(answer: Any) -> Litestar:
    @post("/plain", status_code=200, sync_to_thread=False)
    def plain() -> Response[bytes]:
        return answer(BODY)  # type: ignore[no-any-return]

    @post("/created", status_code=201, sync_to_thread=False)
    def created() -> Response[bytes]:
        return answer(BODY, status_code=201)  # type: ignore[no-any-return]

    @post("/route-status", sync_to_thread=False)  # a POST's default: 201
    def route_status() -> Response[bytes]:
        return answer(BODY)  # type: ignore[no-any-return]

    @get(
        "/with-headers",
        response_headers=[ResponseHeader(name="X-Route", value="yes")],
        response_cookies=[Cookie(key="k", value="v")],
        sync_to_thread=False,
    )
    def with_headers() -> Response[bytes]:
        return answer(BODY)  # type: ignore[no-any-return]

    @get("/set-after", sync_to_thread=False)
    def set_after() -> Response[bytes]:
        response: Response[bytes] = answer(BODY)
        response.set_header("X-Later", "1")
        return response

    return Litestar([plain, created, route_status, with_headers, set_after], openapi_config=None)


async def _messages(app: Litestar, method: str, path: str) -> list[dict[str, Any]]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "headers": [(b"host", b"x")],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)  # type: ignore[arg-type]
    return sent


def _response(body: bytes, status_code: int | None = None) -> Response[bytes]:
    return Response(body, media_type="application/json", status_code=status_code)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/plain"),
        ("POST", "/created"),
        ("POST", "/route-status"),  # no status of its own: the route's 201
        ("GET", "/with-headers"),  # route headers and cookies: Litestar's own way
        ("GET", "/set-after"),  # a header set on the answer: Litestar's own way
    ],
)
async def test_encoded_json_sends_the_messages_litestars_response_sends(
    method: str, path: str
) -> None:
    ours = await _messages(_app(EncodedJson), method, path)
    theirs = await _messages(_app(_response), method, path)
    assert ours == theirs
    assert ours[0]["type"] == "http.response.start"
    assert ours[0]["status"] == {"/created": 201, "/route-status": 201}.get(path, 200)


async def test_a_plain_answer_carries_its_type_and_length() -> None:
    start, body = await _messages(_app(EncodedJson), "POST", "/plain")
    assert start["status"] == 200
    # The body's bytes: {"model": 9, "llama-3.1-70b", 16, "gpu_count": 12, 4, 2, "note":" 8,
    # then "é" in two bytes of UTF-8 and "} 2: 49 characters of ASCII and 2 bytes, 51.
    assert start["headers"] == [(b"content-type", b"application/json"), (b"content-length", b"51")]
    assert body == {"type": "http.response.body", "body": BODY, "more_body": False}
