"""Content negotiation: what a request body may be, and what an answer can be.

``negotiate`` runs before every API handler (create_app wires it on the API router, after the
guards), so nothing is parsed or computed for a request it refuses:

- Accept: a handler answers JSON, plus the renderings its OpenAPI operation lists
  (``also_served_as``). An Accept naming none of them (``q=0`` excludes a type) is a 406 whose
  problem lists what it serves; a missing Accept, ``*/*`` and q-values work (RFC 9110 12.5.1:
  the most specific range sets a type's quality; on a tie the server's order, JSON first).
- A handler that takes a JSON body (a ``data`` parameter) accepts ``application/json`` and
  ``+json`` types only: a body sent as text, XML, a form or multipart is a 415, never parsed.
- The body is one plain JSON document: nested at most ``MAX_JSON_DEPTH`` levels (msgspec raises
  RecursionError at about 990, which was a 500; later steps recurse too) and without a key twice
  in one object (msgspec silently keeps the last one): else a 400 naming the body or the key.
"""

import json
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from litestar import Request
from litestar.exceptions import SerializationException
from litestar.handlers import BaseRouteHandler
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, Schema
from litestar.types import Scope

from service.api.problems import MAX_JSON_DEPTH, ClientProblem

MARKDOWN, CSV, JSON = "text/markdown", "text/csv", "application/json"
SVG = "image/svg+xml"
NEGOTIATED = "negotiated"
"""The opt key create_app's API router sets: these handlers negotiate (and document 406/415)."""


def also_served_as(*media_types: str) -> type[Operation]:
    """An OpenAPI operation whose 200 answer also lists the text renderings; ``negotiate``
    reads the same list, so the spec and the 406 agree."""

    @dataclass
    class TextRenderings(Operation):
        renderings: ClassVar[tuple[str, ...]] = media_types

        def __post_init__(self) -> None:
            ok = (self.responses or {}).get("200")
            content = getattr(ok, "content", None)
            if content is not None:
                for media_type in media_types:
                    content[media_type] = OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING))

    return TextRenderings


SERVED_AS = "served_as"
"""The opt key of a handler that answers only these media types (not JSON), e.g. /plan.svg."""


def served_by(handler: BaseRouteHandler) -> tuple[str, ...]:
    only: tuple[str, ...] | None = handler.opt.get(SERVED_AS)
    if only:
        return only
    return (JSON, *getattr(handler.operation_class, "renderings", ()))  # type: ignore[attr-defined]


def takes_json_body(handler: BaseRouteHandler) -> bool:
    return "data" in handler.parsed_fn_signature.parameters


def _ranges(accept: str) -> list[tuple[str, str, float]]:
    """(type, subtype, q) of each media range; a range with an unreadable q is left out."""
    ranges = []
    for part in accept.split(","):
        media, *params = part.split(";")
        maintype, _, subtype = media.strip().lower().partition("/")
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = -1.0
        if maintype and subtype and 0.0 <= q <= 1.0:
            ranges.append((maintype, subtype, q))
    return ranges


def best_match(accept: str | None, offered: tuple[str, ...]) -> str | None:
    """The offered media type the Accept header ranks highest, None when it accepts none."""
    if accept is None or not accept.strip():
        return offered[0]
    ranges = _ranges(accept)
    best, best_q = None, 0.0
    for media_type in offered:
        maintype, _, subtype = media_type.partition("/")
        specificity, q = -1, 0.0
        for r_type, r_subtype, r_q in ranges:
            if r_type == "*" and r_subtype == "*":
                rank = 0
            elif r_type == maintype and r_subtype == "*":
                rank = 1
            elif (r_type, r_subtype) == (maintype, subtype):
                rank = 2
            else:
                continue
            if rank > specificity:
                specificity, q = rank, r_q
        if q > best_q:
            best, best_q = media_type, q
    return best


def wants(request: Request[Any, Any, Any], *offered: str) -> str:
    """The rendering to answer in, among JSON and ``offered``; a 406 when Accept takes none."""
    return choose(request, (JSON, *offered))


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of the header ``name`` (lower case, as ASGI servers pass names), read
    from the scope: what ``request.headers.get`` answers, without building the Headers."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def choose(request: Request[Any, Any, Any], served: tuple[str, ...]) -> str:
    """The one of ``served`` (in the server's order of preference) Accept ranks highest."""
    accept = header(request.scope, b"accept")
    if accept is None:
        return served[0]  # no Accept: any type (RFC 9110 12.5.1), the server's first
    wanted = best_match(accept, served)
    if wanted is None:
        raise ClientProblem(
            406,
            "Accept",
            f"this answer is served as {', '.join(served)}; Accept names none of them",
            type_="urn:gpu-planner:not-acceptable",
            suggestions=list(served),
        )
    return wanted


def is_json_media_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == JSON or ("/" in media and media.endswith("+json"))


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _too_deep() -> ClientProblem:
    return ClientProblem(
        400,
        "body",
        f"nests arrays and objects more than {MAX_JSON_DEPTH} levels deep",
        type_="urn:gpu-planner:malformed-json",
    )


def _depth_and_keys(decoded: Any) -> tuple[int, int]:
    """How many levels of arrays and objects ``decoded`` nests, and how many keys its objects
    hold in all (level by level: no recursion, whatever the depth)."""
    depth = keys = 0
    level = [decoded] if isinstance(decoded, (dict, list)) else []
    while level:
        depth += 1
        below: list[Any] = []
        for container in level:
            if isinstance(container, dict):
                keys += len(container)
                values: Any = container.values()
            else:
                values = container
            for value in values:  # a plain loop and a tuple: twice a generator's speed
                if isinstance(value, (dict, list)):
                    below.append(value)
        level = below
    return depth, keys


_KEY_COLON = re.compile(rb'"[ \t\n\r]*:')
"""A quote, JSON whitespace, a colon: how every key ends (and, rarely, a string's ``\\":``)."""


_COLON_NEXT = re.compile(rb"[ \t\n\r]*:")
_QUOTES_ONE_BY_ONE = 128
"""A body with at most this many quotes has them found one by one (bytes.find runs at memchr
speed: about 2 us for a 33,000-byte pasted log with its dozen quotes, where the regex reads
every byte in about 10 us); past that, the regex counts them."""


def _key_colons(body: bytes) -> int:
    """How many of ``body``'s quotes a colon follows, past JSON whitespace: what
    ``len(_KEY_COLON.findall(body))`` counts."""
    count = seen = 0
    at = body.find(b'"')
    while at >= 0:
        seen += 1
        if seen > _QUOTES_ONE_BY_ONE:
            return len(_KEY_COLON.findall(body))
        if _COLON_NEXT.match(body, at + 1):
            count += 1
        at = body.find(b'"', at + 1)
    return count


_COUNT_COLONS_BELOW = 4096
"""Bodies up to this many bytes first count every colon (it rarely exceeds their keys); a
longer one (a pasted log, its timestamps full of colons) goes straight to the regex count."""


def check_json_shape(body: bytes, decoded: Any) -> None:
    """400 when ``decoded`` (``body``, decoded) nests deeper than MAX_JSON_DEPTH or one of its
    objects had a key twice. Each key is followed by a colon, so when the body has no more
    colons than the decoded objects have keys, none was repeated; only otherwise (colons in
    strings, or a repeat) is the body parsed again, pair by pair, to name the key. Only the
    colons that follow a quote are counted: a key's colon always does (past JSON whitespace),
    so the count never falls short of the keys written, and a log pasted in a string (its
    timestamps' colons) does not force the second parse."""
    if type(decoded) is dict and body.count(b"{") == 1 and b"[" not in body:
        depth, keys = 1, len(decoded)  # one object of scalars (the only brace: none in a string)
    else:
        depth, keys = _depth_and_keys(decoded)
    if depth > MAX_JSON_DEPTH:
        raise _too_deep()
    if len(body) <= _COUNT_COLONS_BELOW and body.count(b":") <= keys:
        return  # a small body: counting every colon is cheaper than the regex, and suffices
    if _key_colons(body) <= keys:
        return
    try:
        json.loads(body, object_pairs_hook=_refuse_duplicates)
    except _DuplicateKey as exc:
        raise ClientProblem(
            400,
            exc.key,
            f"the key {exc.key!r} appears twice in one object",
            type_="urn:gpu-planner:malformed-json",
        ) from None
    except ValueError:  # a number Python refuses, say: msgspec accepted it, so do we
        pass


_FACTS = "negotiation_facts"
"""The opt key where ``negotiate`` keeps what it reads of a handler (its renderings, whether it
takes a JSON body), found on the handler's first request: they never change."""


def _facts(handler: BaseRouteHandler) -> tuple[tuple[str, ...], bool]:
    facts: tuple[tuple[str, ...], bool] | None = handler.opt.get(_FACTS)
    if facts is None:
        facts = handler.opt[_FACTS] = (served_by(handler), takes_json_body(handler))
    return facts


async def negotiate(request: Request[Any, Any, Any]) -> None:
    """The before_request hook of the API handlers: 406, 415 and 400 as the docstring says."""
    served, takes_body = _facts(request.route_handler)
    if request.method != "HEAD" and request.method != "OPTIONS":
        choose(request, served)
    if not takes_body:
        return
    body = await request.body()  # 413 past the limit; kept for the decoder
    if not body:
        return
    content_type = header(request.scope, b"content-type") or ""
    if not is_json_media_type(content_type):
        raise ClientProblem(
            415,
            "Content-Type",
            "the body must be JSON (Content-Type: application/json); it came "
            + (f"as {content_type!r}" if content_type else "without a Content-Type"),
            type_="urn:gpu-planner:unsupported-media-type",
            suggestions=[JSON],
        )
    try:
        decoded = await request.json()  # Litestar's own decoding, kept for the handler
    except SerializationException:  # malformed: the decoder names it again, as before
        return
    except RecursionError:  # msgspec's own limit, about 990 levels
        raise _too_deep() from None
    check_json_shape(body, decoded)
