"""Make the generated OpenAPI say what the server enforces.

Litestar does not render msgspec's ``forbid_unknown_fields=True`` as ``additionalProperties:
false``, so clients (and schemathesis) would believe extra fields are welcome while the server
answers 400 naming them. Nor does it render the bounds msgspec enforces on list items (a
``list[Annotated[int, Meta(ge=1)]]`` comes out as bare integers) or some bounds of nullable
fields (``ge=0`` on an optional integer is dropped). Both are fixed here, once, when the app is
built: the bounds are copied from msgspec's own JSON Schema of each body, which is what its
decoder checks. The 429 and 503 answers document their Retry-After header; the paths the rate
limit skips (service.observability.UNLIMITED_PATHS) do not declare a 429. The 406 and 415 that
content negotiation answers are declared here too.
"""

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import msgspec
from litestar import Litestar
from litestar.openapi.spec import (
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Reference,
    Schema,
)
from litestar.routes import HTTPRoute

from service.api.negotiation import NEGOTIATED, takes_json_body
from service.api.problems import DESCRIPTIONS, JSON_BODY_400, PROBLEM_JSON

_BOUNDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum",
    "exclusiveMaximum": "exclusive_maximum",
    "multipleOf": "multiple_of",
    "minLength": "min_length",
    "maxLength": "max_length",
    "pattern": "pattern",
    "minItems": "min_items",
    "maxItems": "max_items",
    "uniqueItems": "unique_items",
    "minProperties": "min_properties",
    "maxProperties": "max_properties",
}
"""JSON Schema's bound keywords and the attribute each has on Litestar's Schema."""


def _struct_classes(base: type[msgspec.Struct] = msgspec.Struct) -> Iterator[type[msgspec.Struct]]:
    for cls in base.__subclasses__():
        yield cls
        yield from _struct_classes(cls)


def _service_structs() -> dict[str, type[msgspec.Struct]]:
    return {cls.__name__: cls for cls in _struct_classes() if cls.__module__.startswith("service.")}


def _forbidding_struct_names() -> set[str]:
    return {
        name
        for name, cls in _service_structs().items()
        if cls.__struct_config__.forbid_unknown_fields
    }


def _components(openapi: OpenAPI) -> dict[str, Any]:
    return (openapi.components.schemas if openapi.components else None) or {}


def _short(key: str) -> str:
    return key.rsplit(".", 1)[-1].rstrip("_")


def forbid_unknown_properties(openapi: OpenAPI) -> OpenAPI:
    names = _forbidding_struct_names()
    for key, schema in _components(openapi).items():
        if isinstance(schema, Schema) and (key in names or _short(key) in names):
            schema.additional_properties = False
    return openapi


def declare_negotiation(app: Litestar) -> OpenAPI:
    """406 on every operation that negotiates (the API router's handlers), 415 (and 400) on
    those that take a JSON body: read from the handlers, so the spec cannot drift from them."""
    openapi = app.openapi_schema
    for route in app.routes:
        if not isinstance(route, HTTPRoute) or openapi.paths is None:
            continue
        path_item = openapi.paths.get(route.path_format)
        for method, (handler, _) in route.route_handler_map.items():
            operation = getattr(path_item, method.lower(), None)
            if not isinstance(operation, Operation) or not handler.opt.get(NEGOTIATED):
                continue
            responses = dict(operation.responses or {})
            responses.setdefault("406", _problem(406))
            if takes_json_body(handler):
                bad = responses.get("400")
                responses["400"] = (
                    replace(bad, description=JSON_BODY_400)
                    if isinstance(bad, OpenAPIResponse)
                    else _problem(400, JSON_BODY_400)
                )
                responses.setdefault("415", _problem(415))
            operation.responses = dict(sorted(responses.items()))
    return openapi


def _problem(status: int, description: str = "") -> OpenAPIResponse:
    return OpenAPIResponse(
        description=description or DESCRIPTIONS[status],
        content={PROBLEM_JSON: OpenAPIMediaType(schema=Reference("#/components/schemas/Problem"))},
    )


def _type_of(schema: Schema) -> str | None:
    kind = schema.type
    return kind.value if isinstance(kind, OpenAPIType) else None


def _merge_bounds(target: Schema, source: dict[str, Any]) -> None:
    """Copy every bound of msgspec's ``source`` schema that Litestar's ``target`` lacks."""
    for keyword, attribute in _BOUNDS.items():
        if keyword in source and getattr(target, attribute) is None:
            setattr(target, attribute, source[keyword])
    if isinstance(target.items, Schema) and isinstance(source.get("items"), dict):
        _merge_bounds(target.items, source["items"])
    for name, property_source in (source.get("properties") or {}).items():
        property_target = (target.properties or {}).get(name)
        if isinstance(property_target, Schema):
            _merge_bounds(property_target, property_source)
    # A nullable field: msgspec says anyOf [T, null], Litestar oneOf [T, null]; pair by type.
    for branch in source.get("anyOf") or source.get("oneOf") or []:
        for candidate in target.one_of or target.any_of or []:
            if (
                isinstance(candidate, Schema)
                and "type" in branch
                and _type_of(candidate) == branch["type"]
            ):
                _merge_bounds(candidate, branch)


def state_bounds(openapi: OpenAPI) -> OpenAPI:
    """Every bound msgspec enforces on a service Struct, stated in that Struct's component."""
    structs = _service_structs()
    for key, schema in _components(openapi).items():
        cls = structs.get(key) or structs.get(_short(key))
        if cls is None or not isinstance(schema, Schema):
            continue
        _, sources = msgspec.json.schema_components([cls])
        source = sources.get(cls.__name__)
        if source is not None:
            _merge_bounds(schema, source)
    return openapi


_RETRY_AFTER = {
    "429": "Seconds until the caller's rate limit lets a request through.",
    "503": "Seconds after which to retry (the database may be back).",
}


def document_retry_after(openapi: OpenAPI, unlimited_paths: frozenset[str]) -> OpenAPI:
    """The Retry-After header on every 429 and 503; no 429 where the rate limit never applies."""
    for path, item in (openapi.paths or {}).items():
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method, None)
            responses = getattr(operation, "responses", None)
            if not responses:
                continue
            if path in unlimited_paths:
                responses.pop("429", None)
            for status, description in _RETRY_AFTER.items():
                response = responses.get(status)
                if isinstance(response, OpenAPIResponse):
                    response.headers = {
                        **(response.headers or {}),
                        "Retry-After": OpenAPIHeader(
                            schema=Schema(type=OpenAPIType.INTEGER, minimum=1),
                            description=description,
                        ),
                    }
    return openapi
