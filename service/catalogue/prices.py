"""GPU prices from the catalogue, for costing plans and matrix cells."""

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.convert import gpu_price_of
from service.catalogue.lookup import serving_snapshot
from service.catalogue.tables import Gpu
from service.sizing.cost import GpuPrice


async def gpu_prices(session: AsyncSession) -> dict[str, GpuPrice]:
    """Every GPU's prices by slug (a GPU without prices maps to an unpriced GpuPrice)."""
    snapshot = await serving_snapshot()  # the computations: the in-memory catalogue (cache.py)
    rows = (
        snapshot.rows[Gpu.__tablename__]
        if snapshot is not None
        else (await session.scalars(select(Gpu))).all()
    )
    return {row.slug: gpu_price_of(row) for row in rows}
