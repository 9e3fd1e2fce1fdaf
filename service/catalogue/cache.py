"""An in-memory snapshot of the catalogue, for the computations (the handlers that opt in with
service.api.cached_catalogue: /plan, /matrix, /offload, /verify, the chat commands).

Why: the computations only read the catalogue (about 50 rows), so each replica keeps all of it
in memory. They keep working from the last snapshot while the database is down, and they do
not pay a database round trip per lookup.

Staleness across replicas (the design choice): every ``refresh_s`` seconds at most (setting
``CATALOGUE_REFRESH_S``, default 5), a replica computes a *fingerprint* of the catalogue in the
database: sha256 over (table, id, updated_at) of every row of the four catalogue tables (about
50 short rows, one cheap query per table). A create, replace or delete anywhere (any replica,
or psql) changes it: an insert or delete changes the set of ids, a replace moves ``updated_at``
(advanced-alchemy stamps it on every UPDATE through the ORM). Only when the fingerprint differs
is the whole catalogue reloaded. So an admin edit on replica A is served by replica B within
``refresh_s`` seconds plus one request, with no migration and no version table. Chosen over
max(updated_at) + count: a writer whose clock lags could write an updated_at below the current
maximum, and a delete plus an insert keeps the count; a fingerprint of every (id, updated_at)
sees both. An edit that bypasses the ORM and leaves updated_at alone is not seen (restart, or
bump updated_at).

Freshness is stale-while-revalidate: a request that finds the check due starts it in the
background and is answered from the snapshot it has, so computation latency never includes
the database, and a dead database only means "keep the last snapshot" (each failure is logged
and counted; the next check is ``refresh_s`` later). Exceptions: the first load (nothing to
serve yet: that request waits, and a dead database is a 503), and after a catalogue write on
this replica (``expire()``, called by the request middleware), where the next computation waits
for the reload so the writer reads its own write.
"""

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service.catalogue.lookup import Row, serving_snapshot
from service.catalogue.memory import Entry as Entry  # re-exported: the snapshot moved there
from service.catalogue.memory import Snapshot as Snapshot
from service.catalogue.memory import Table as Table
from service.catalogue.memory import snapshot_of as snapshot_of
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.db import within

log = logging.getLogger("service.catalogue.cache")
TABLES: tuple[type[Interconnect | Gpu | Model | Format], ...] = (Interconnect, Gpu, Model, Format)


async def fingerprint(session: AsyncSession) -> str:
    digest = hashlib.sha256()
    for table in TABLES:
        result = await session.execute(select(table.id, table.updated_at).order_by(table.id))
        for row_id, updated_at in result.all():
            digest.update(f"{table.__tablename__}:{row_id}:{updated_at};".encode())
    return digest.hexdigest()


async def load(session: AsyncSession, current: str) -> Snapshot:
    """Read the whole catalogue, in the transaction that computed its fingerprint ``current``."""
    rows: dict[str, list[Any]] = {
        t.__tablename__: list((await session.scalars(select(t))).all()) for t in TABLES
    }
    session.expunge_all()
    return snapshot_of(rows, current)


async def serving_rows(session: AsyncSession, table: type[Row]) -> Sequence[Row]:
    """Every row of ``table``: the serving snapshot's where this request computes from it
    (lookup.serving_cache), else the database's."""
    snapshot = await serving_snapshot()
    if snapshot is not None:
        return snapshot.rows[table.__tablename__]
    return (await session.scalars(select(table))).all()


class CatalogueCache:
    """One per app (replica). ``current()`` is what the computations read."""

    def __init__(
        self,
        engine: AsyncEngine,
        refresh_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_error: Callable[[BaseException], None] | None = None,
        timeout_s: float = 0,
    ) -> None:
        self.refresh_s = refresh_s
        self.timeout_s = timeout_s
        """A check that takes longer is abandoned (a frozen database would hold the lock)."""
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._clock = clock
        self._on_error = on_error
        self._snapshot: Snapshot | None = None
        self._checked_at = float("-inf")
        self._expired = False
        self._lock: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None
        self.checks = 0
        """Fingerprint checks made (tests read it: at most one per refresh_s)."""
        self.loads = 0

    @property
    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def expire(self) -> None:
        """A catalogue write committed here: the next computation waits for a fresh check."""
        self._expired = True

    async def current(self) -> Snapshot:
        snapshot = self._snapshot
        if snapshot is None or self._expired:
            return await self.refresh(raise_if_empty=True)
        due = self._clock() - self._checked_at >= self.refresh_s
        if due and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._refresh_quietly())
        return snapshot

    async def _refresh_quietly(self) -> None:
        with contextlib.suppress(Exception):  # logged and counted inside; never raise here
            await self.refresh(raise_if_empty=False)

    async def refresh(self, *, raise_if_empty: bool = False) -> Snapshot:
        """Check the fingerprint, reload when it changed. A database error keeps the snapshot
        (re-raised only when there is none and ``raise_if_empty``)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            started = self._clock()
            if (
                self._snapshot is not None
                and not self._expired
                and (started - self._checked_at < self.refresh_s)
            ):
                return self._snapshot  # another request refreshed while this one waited
            try:
                if self.timeout_s > 0:
                    await within(self.timeout_s, self._check())
                else:
                    await self._check()
            except Exception as exc:
                if self._on_error is not None:
                    self._on_error(exc)
                log.warning("catalogue check failed, serving the last snapshot: %r", exc)
                if self._snapshot is None and raise_if_empty:
                    raise
            finally:
                self._checked_at = started
                self._expired = False  # on failure too: serve the snapshot, retry in refresh_s
            if self._snapshot is None:  # only reachable with raise_if_empty=False
                raise LookupError("no catalogue snapshot yet")
            return self._snapshot

    async def _check(self) -> None:
        async with self._sessions() as session, session.begin():
            self.checks += 1
            current = await fingerprint(session)
            if self._snapshot is None or current != self._snapshot.fingerprint:
                self._snapshot = await load(session, current)
                self.loads += 1
                log.info("catalogue loaded", extra={"fingerprint": current[:12]})

    async def settled(self) -> None:
        """Wait for a background check in flight (tests; shutdown)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
