"""Find catalogue rows by slug or short alias and turn them into the core's specs.

Resolution order: the exact slug; else the rows listing the name as an alias; else the rows whose
slug starts with "<name>-". One match wins; several are ambiguous (404 listing them); none is a
404 suggesting the closest slugs (difflib).
"""

from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.convert import gpu_spec_of, link_spec_of, model_spec_of, number_format_of
from service.catalogue.memory import TABLE_KINDS
from service.catalogue.names import Named as Named  # re-exported: the rules moved there
from service.catalogue.names import choose
from service.catalogue.names import closest as closest
from service.catalogue.names import normalise as normalise
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.sizing.formats import NumberFormat
from service.sizing.hardware import GpuSpec, LinkSpec
from service.sizing.models import ModelSpec

if TYPE_CHECKING:
    from sqlalchemy.orm import InstrumentedAttribute

    from service.catalogue.cache import CatalogueCache
    from service.catalogue.memory import Snapshot

Row = TypeVar("Row", Gpu, Interconnect, Model, Format)

serving_cache: ContextVar["CatalogueCache | None"] = ContextVar("serving_cache", default=None)
"""Set (by service.api.cached_catalogue, for the handlers that compute) to the app's in-memory
catalogue cache: the spec lookups below then answer from its snapshot and never touch the
database, so computations keep working while it is down. Saved plans and the catalogue endpoints
leave it unset and read the database (a saved plan must store exactly the rows it used)."""


async def serving_snapshot() -> "Snapshot | None":
    """The snapshot computations are served from in this request, or None (read the database)."""
    cache = serving_cache.get()
    return None if cache is None else await cache.current()


KIND = {t: TABLE_KINDS[t.__tablename__] for t in (Gpu, Interconnect, Model, Format)}


async def resolve(
    session: AsyncSession, table: type[Row], name: str, field: str, *, status: int = 404
) -> Row:
    """The row ``name`` means, or NotFound naming ``field``."""
    key = normalise(name)
    row = await session.scalar(select(table).where(table.slug == key))
    if row is not None:
        return row
    rows = list((await session.scalars(select(table).order_by(table.slug))).all())
    return choose(rows, name, KIND[table], field, status=status)


async def _links(session: AsyncSession) -> dict[str, LinkSpec]:
    rows = (await session.scalars(select(Interconnect))).all()
    return {row.slug: link_spec_of(row) for row in rows}


async def gpu_spec(session: AsyncSession, slug: str, field: str = "gpu") -> GpuSpec:
    if (snapshot := await serving_snapshot()) is not None:
        return snapshot.gpu_spec(slug, field)
    row = await resolve(session, Gpu, slug, field)
    return gpu_spec_of(row, await _links(session))


async def all_gpu_specs(session: AsyncSession) -> list[GpuSpec]:
    """Every catalogue GPU, ordered by slug."""
    if (snapshot := await serving_snapshot()) is not None:
        return snapshot.all_gpu_specs()
    links = await _links(session)
    rows = (await session.scalars(select(Gpu).order_by(Gpu.slug))).all()
    return [gpu_spec_of(row, links) for row in rows]


async def model_spec(session: AsyncSession, slug: str, field: str = "model") -> ModelSpec:
    if (snapshot := await serving_snapshot()) is not None:
        return snapshot.model_spec(slug, field)
    return model_spec_of(await resolve(session, Model, slug, field))


async def all_model_specs(session: AsyncSession) -> list[ModelSpec]:
    """Every catalogue model, ordered by slug."""
    if (snapshot := await serving_snapshot()) is not None:
        return snapshot.all_model_specs()
    rows = (await session.scalars(select(Model).order_by(Model.slug))).all()
    return [model_spec_of(row) for row in rows]


async def link_spec(session: AsyncSession, slug: str, field: str = "link") -> LinkSpec:
    if (snapshot := await serving_snapshot()) is not None:
        return snapshot.link_spec(slug, field)
    return link_spec_of(await resolve(session, Interconnect, slug, field))


async def number_format(session: AsyncSession, slug: str, field: str) -> NumberFormat:
    if (snapshot := await serving_snapshot()) is not None:
        return snapshot.number_format(slug, field)
    return number_format_of(await resolve(session, Format, slug, field))


def same_text_ignoring_case(
    column: "InstrumentedAttribute[str]", value: str
) -> ColumnElement[bool]:
    """``column`` equals ``value`` up to (ASCII) case, on SQLite and PostgreSQL alike: an ILIKE
    whose wildcards and escape character are escaped, with the escape named explicitly
    (PostgreSQL's default escape is a backslash, SQLite has none: ``\\`` alone was an error on
    one and a literal on the other, and ``%`` matched every row)."""
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return column.ilike(escaped, escape="\\")
