"""Computations read the catalogue from the app's in-memory snapshot, not the database.

Each computing handler opts in with ``middleware=CACHED_CATALOGUE``: its catalogue lookups then
answer from the snapshot (service/catalogue/cache.py), so computations keep working while the
database is down and never wait on it. Saved plans and the catalogue endpoints do not opt in:
they read the database (a saved plan stores exactly the rows it used).
"""

from litestar import Litestar
from litestar.types import ASGIApp, Receive, Scope, Send

from service.catalogue.lookup import serving_cache
from service.catalogue.memory import Snapshot


def serve_from_cached_catalogue(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        token = serving_cache.set(scope["app"].state.cache)
        try:
            await app(scope, receive, send)
        finally:
            serving_cache.reset(token)

    return middleware


CACHED_CATALOGUE = [serve_from_cached_catalogue]


async def cached_snapshot() -> Snapshot:
    """The snapshot a CACHED_CATALOGUE handler computes from (a 503 while there is none and
    the database does not answer, as for its lookups)."""
    cache = serving_cache.get()
    assert cache is not None, "the handler must opt in with middleware=CACHED_CATALOGUE"
    return await cache.current()


def paths_without_database(app: Litestar) -> frozenset[str]:
    """The paths whose every handler computes from the cached catalogue and takes no database
    session (POST /plan, /verify): they never wait on the database but through the cache,
    whose checks have their own timeout, so the request deadline's watch task
    (service/api/transactions.py) is not needed there."""
    paths: dict[str, bool] = {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if "OPTIONS" in handler.http_methods or "HEAD" in handler.http_methods:
                continue  # Litestar's own
            cached = serve_from_cached_catalogue in (handler.middleware or [])
            sessionless = "db_session" not in handler.parsed_fn_signature.parameters
            paths[route.path] = paths.get(route.path, True) and cached and sessionless
    return frozenset(path for path, free in paths.items() if free)
