"""GPU prices from the catalogue, for costing plans and matrix cells."""

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.convert import gpu_price_of
from service.catalogue.lookup import serving_snapshot
from service.catalogue.tables import Gpu
from service.sizing.cost import GpuPrice


async def gpu_prices(session: AsyncSession) -> dict[str, GpuPrice]:
    """Every GPU's prices by slug (a GPU without prices maps to an unpriced GpuPrice): the
    serving snapshot's, converted once per snapshot, else the database's."""
    snapshot = await serving_snapshot()
    if snapshot is not None:
        return snapshot.prices()
    return {row.slug: gpu_price_of(row) for row in (await session.scalars(select(Gpu))).all()}
