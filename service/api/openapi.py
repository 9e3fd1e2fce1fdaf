"""Make the generated OpenAPI say what the server enforces.

Litestar does not render msgspec's ``forbid_unknown_fields=True`` as ``additionalProperties:
false``, so clients (and schemathesis) would believe extra fields are welcome while the server
answers 400 naming them. Bodies that forbid unknown fields get the flag here, once, when the app
is built. The 406 and 415 that content negotiation answers are declared here too.
"""

from collections.abc import Iterator
from dataclasses import replace

import msgspec
from litestar import Litestar
from litestar.openapi.spec import (
    OpenAPI,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    Schema,
)
from litestar.routes import HTTPRoute

from service.api.negotiation import NEGOTIATED, takes_json_body
from service.api.problems import DESCRIPTIONS, JSON_BODY_400, PROBLEM_JSON


def _struct_classes(base: type[msgspec.Struct] = msgspec.Struct) -> Iterator[type[msgspec.Struct]]:
    for cls in base.__subclasses__():
        yield cls
        yield from _struct_classes(cls)


def _forbidding_struct_names() -> set[str]:
    return {
        cls.__name__
        for cls in _struct_classes()
        if cls.__module__.startswith("service.") and cls.__struct_config__.forbid_unknown_fields
    }


def forbid_unknown_properties(openapi: OpenAPI) -> OpenAPI:
    names = _forbidding_struct_names()
    schemas = openapi.components.schemas if openapi.components else None
    for key, schema in (schemas or {}).items():
        short = key.rsplit(".", 1)[-1].rstrip("_")
        if isinstance(schema, Schema) and (key in names or short in names):
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
