"""The API docs pages under /schema, served offline: internal networks are often closed.

Litestar's Swagger UI and Redoc pages load their scripts, styles, favicon and fonts from CDNs
by default. Here they load Swagger UI's and Redoc's distribution builds as shipped inside the
``drf-spectacular-sidecar`` package (its ``static/`` folder; the package is found without
importing it, since its ``__init__`` imports Django), served under /schema/assets/. Only
the pages whose assets ship are offered: Swagger UI at /schema/swagger, Redoc at /schema/redoc
(and /schema), the document at /schema/openapi.json.
"""

from importlib.util import find_spec
from pathlib import Path

from litestar.openapi.plugins import (
    OpenAPIRenderPlugin,
    RedocRenderPlugin,
    SwaggerRenderPlugin,
)
from litestar.router import Router
from litestar.static_files import create_static_files_router

ASSETS_PATH = "/schema/assets"


def sidecar_static() -> Path:
    """drf-spectacular-sidecar's folder of Swagger UI and Redoc builds."""
    spec = find_spec("drf_spectacular_sidecar")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("drf-spectacular-sidecar is not installed (see pyproject.toml)")
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "drf_spectacular_sidecar"


FAVICON = (
    f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/swagger-ui-dist/favicon-32x32.png'>"
)


def render_plugins() -> list[OpenAPIRenderPlugin]:
    """Redoc first (it answers /schema itself, as Litestar's default did), then Swagger UI."""
    swagger = f"{ASSETS_PATH}/swagger-ui-dist"
    return [
        RedocRenderPlugin(
            js_url=f"{ASSETS_PATH}/redoc/bundles/redoc.standalone.js",
            google_fonts=False,
            favicon=FAVICON,
            path=["/redoc", "/"],
        ),
        SwaggerRenderPlugin(
            js_url=f"{swagger}/swagger-ui-bundle.js",
            css_url=f"{swagger}/swagger-ui.css",
            standalone_preset_js_url=f"{swagger}/swagger-ui-standalone-preset.js",
            favicon=FAVICON,
        ),
    ]


def assets_router() -> Router:
    return create_static_files_router(
        path=ASSETS_PATH, directories=[sidecar_static()], include_in_schema=False
    )
