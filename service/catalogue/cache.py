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
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service.catalogue.convert import (
    gpu_price_of,
    gpu_spec_of,
    link_spec_of,
    model_spec_of,
    number_format_of,
)
from service.catalogue.lookup import KIND, Row, choose, normalise, serving_snapshot
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.db import within
from service.sizing.cost import GpuPrice
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.models import ModelSpec

log = logging.getLogger("service.catalogue.cache")
TABLES: tuple[type[Interconnect | Gpu | Model | Format], ...] = (Interconnect, Gpu, Model, Format)
Spec = TypeVar("Spec")


@dataclass(frozen=True)
class Entry(Generic[Spec]):
    """One catalogue row as the snapshot keeps it: what resolution needs, and the core's spec."""

    slug: str
    aliases: list[str]
    spec: Spec


@dataclass(frozen=True)
class Table(Generic[Spec]):
    kind: str
    entries: list[Entry[Spec]]  # sorted by slug, like the database lookups
    by_slug: dict[str, Entry[Spec]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_slug", {e.slug: e for e in self.entries})

    def resolve(self, name: str, field: str) -> Spec:
        """Same rules as lookup.resolve: exact slug, else alias, else "<name>-" prefix."""
        entry = self.by_slug.get(normalise(name))
        if entry is None:
            entry = choose(self.entries, name, self.kind, field)
        return entry.spec


@dataclass(frozen=True)
class Snapshot:
    """The whole catalogue at one fingerprint, as the core's specs; immutable once built."""

    fingerprint: str
    links: Table[LinkSpec]
    gpus: Table[GpuSpec]
    models: Table[ModelSpec]
    formats: Table[NumberFormat]
    rows: dict[str, list[Any]]
    """The detached ORM rows by table name, for readers that need columns the specs lack."""

    def gpu_spec(self, name: str, field: str = "gpu") -> GpuSpec:
        return self.gpus.resolve(name, field)

    def all_gpu_specs(self) -> list[GpuSpec]:
        return [e.spec for e in self.gpus.entries]

    def model_spec(self, name: str, field: str = "model") -> ModelSpec:
        return self.models.resolve(name, field)

    def all_model_specs(self) -> list[ModelSpec]:
        return [e.spec for e in self.models.entries]

    def link_spec(self, name: str, field: str = "link") -> LinkSpec:
        return self.links.resolve(name, field)

    def number_format(self, name: str, field: str) -> NumberFormat:
        return self.formats.resolve(name, field)

    @cached_property
    def _prices(self) -> dict[str, GpuPrice]:
        return {row.slug: gpu_price_of(row) for row in self.rows[Gpu.__tablename__]}

    def prices(self) -> dict[str, GpuPrice]:
        """Every GPU's prices by slug (a GPU without prices: an unpriced GpuPrice), converted
        once per snapshot; a copy, the caller's to change."""
        return dict(self._prices)


def _table(kind: str, rows: Sequence[Any], convert: Callable[[Any], Spec]) -> Table[Spec]:
    ordered = sorted(rows, key=lambda r: r.slug)
    return Table(kind, [Entry(r.slug, list(r.aliases), convert(r)) for r in ordered])


async def fingerprint(session: AsyncSession) -> str:
    digest = hashlib.sha256()
    for table in TABLES:
        result = await session.execute(select(table.id, table.updated_at).order_by(table.id))
        for row_id, updated_at in result.all():
            digest.update(f"{table.__tablename__}:{row_id}:{updated_at};".encode())
    return digest.hexdigest()


def snapshot_of(rows: dict[str, list[Any]], fingerprint: str = "") -> Snapshot:
    """The snapshot of catalogue ``rows`` (by table name), converted to the core's specs."""
    links = _table(KIND[Interconnect], rows[Interconnect.__tablename__], link_spec_of)
    link_specs = {e.slug: e.spec for e in links.entries}
    return Snapshot(
        fingerprint=fingerprint,
        links=links,
        gpus=_table(KIND[Gpu], rows[Gpu.__tablename__], lambda r: gpu_spec_of(r, link_specs)),
        models=_table(KIND[Model], rows[Model.__tablename__], model_spec_of),
        formats=_table(KIND[Format], rows[Format.__tablename__], number_format_of),
        rows=rows,
    )


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
