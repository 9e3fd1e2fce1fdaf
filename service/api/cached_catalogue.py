"""Computations read the catalogue from the app's in-memory snapshot, not the database.

Each computing handler opts in with ``middleware=CACHED_CATALOGUE``: its catalogue lookups then
answer from the snapshot (service/catalogue/cache.py), so computations keep working while the
database is down and never wait on it. Saved plans and the catalogue endpoints do not opt in:
they read the database (a saved plan stores exactly the rows it used).

A handler that takes no session and computes on the snapshot it is handed (POST /plan,
/verify) opts in with ``opt=SNAPSHOT_ONLY`` instead and reads ``request_snapshot``: it needs
no lookup through the context, so neither the middleware nor the exception-handling layer
Litestar puts around every route that has middleware of its own.
"""

from typing import TYPE_CHECKING, Any

from litestar import Litestar, Request
from litestar.types import ASGIApp, Receive, Scope, Send

from service.catalogue.lookup import serving_cache
from service.catalogue.memory import Snapshot

if TYPE_CHECKING:
    from service.catalogue.cache import CatalogueCache


def serve_from_cached_catalogue(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        token = serving_cache.set(scope["app"].state.cache)
        try:
            await app(scope, receive, send)
        finally:
            serving_cache.reset(token)

    return middleware


CACHED_CATALOGUE = [serve_from_cached_catalogue]

SNAPSHOT_ONLY_KEY = "snapshot_only"
SNAPSHOT_ONLY = {SNAPSHOT_ONLY_KEY: True}
"""The opt of a handler that computes from ``request_snapshot`` alone, without a session."""


async def request_snapshot(request: Request[Any, Any, Any]) -> Snapshot:
    """The app's serving snapshot, for a SNAPSHOT_ONLY handler (a 503 while there is none and
    the database does not answer, as for CACHED_CATALOGUE's lookups)."""
    cache: CatalogueCache = request.app.state.cache
    return await cache.current()


def paths_without_database(app: Litestar) -> frozenset[str]:
    """The paths whose every handler computes from the cached catalogue (CACHED_CATALOGUE or
    SNAPSHOT_ONLY) and takes no database session (POST /plan, /verify): they never wait on
    the database but through the cache, whose checks have their own timeout, so the request
    deadline's watch task and transaction (service/api/transactions.py) are not needed
    there."""
    paths: dict[str, bool] = {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if "OPTIONS" in handler.http_methods or "HEAD" in handler.http_methods:
                continue  # Litestar's own
            cached = serve_from_cached_catalogue in (handler.middleware or []) or bool(
                handler.opt.get(SNAPSHOT_ONLY_KEY)
            )
            sessionless = "db_session" not in handler.parsed_fn_signature.parameters
            paths[route.path] = paths.get(route.path, True) and cached and sessionless
    return frozenset(path for path, free in paths.items() if free)
