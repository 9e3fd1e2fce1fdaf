"""Computations read the catalogue from the app's in-memory snapshot, not the database.

Each computing handler opts in with ``middleware=CACHED_CATALOGUE``: its catalogue lookups then
answer from the snapshot (service/catalogue/cache.py), so computations keep working while the
database is down and never wait on it. Saved plans and the catalogue endpoints do not opt in:
they read the database (a saved plan stores exactly the rows it used).
"""

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
