"""The browser page: static HTML, one small script per page and a stylesheet, shipped as package
data and served beside the API. Not API operations: out of the OpenAPI schema and outside the
API router, so content negotiation (406/415) never applies; the rate limit and the request log
treat them like any other request.

The page is a client of the public API like any other (/plan, /matrix, /offload, /plans): it
computes nothing itself, so it shows exactly what the API says. Why no framework: the page is
a form, a few fetches and one SVG bar; hand-written SVG and about 400 lines of script need no
build step, no npm and nothing fetched from a CDN (the CSP below forbids any other origin).
"""

from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from litestar import MediaType, Response, Router, get
from litestar.datastructures import CacheControlHeader
from litestar.handlers import HTTPRouteHandler
from litestar.params import PathParameter
from litestar.static_files import create_static_files_router

STATIC = Path(str(resources.files(__package__) / "static"))
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}


def _page(name: str) -> Response[Any]:
    # Read per request: a few kB from the package, and an edited file shows without a restart.
    html = (STATIC / name).read_text(encoding="utf-8")
    return Response(html, media_type=MediaType.HTML, headers=HEADERS)


@get("/", include_in_schema=False, cache_control=CacheControlHeader(no_cache=True))
async def planner_page() -> Response[Any]:
    """The planner: the model, GPU, formats and workload in; the answer, drawn, out."""
    return _page("index.html")


@get(
    "/plans/{plan_id:int}/view",
    include_in_schema=False,
    cache_control=CacheControlHeader(no_cache=True),
)
async def saved_plan_page(plan_id: Annotated[int, PathParameter(ge=1)]) -> Response[Any]:
    """A saved plan, read-only: the script reads the id from the URL and asks /plans."""
    return _page("plan.html")


static_router = create_static_files_router(
    "/static",
    directories=[STATIC],
    include_in_schema=False,
    cache_control=CacheControlHeader(no_cache=True),
)

web_handlers: list[HTTPRouteHandler | Router] = [planner_page, saved_plan_page, static_router]
