"""GPU prices from the catalogue, for costing plans and matrix cells."""

from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.cache import serving_rows
from service.catalogue.convert import gpu_price_of
from service.catalogue.tables import Gpu
from service.sizing.cost import GpuPrice


async def gpu_prices(session: AsyncSession) -> dict[str, GpuPrice]:
    """Every GPU's prices by slug (a GPU without prices maps to an unpriced GpuPrice)."""
    return {row.slug: gpu_price_of(row) for row in await serving_rows(session, Gpu)}
