"""Make the generated OpenAPI say what the server enforces.

Litestar does not render msgspec's ``forbid_unknown_fields=True`` as ``additionalProperties:
false``, so clients (and schemathesis) would believe extra fields are welcome while the server
answers 400 naming them. Bodies that forbid unknown fields get the flag here, once, when the app
is built.
"""

from collections.abc import Iterator

import msgspec
from litestar.openapi.spec import OpenAPI, Schema


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
