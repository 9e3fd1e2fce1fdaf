"""The catalogue's write rules that its bodies' schemas cannot state: each failure a 422 naming
the field (prices need a currency and a real date, link slugs name interconnects, a model's
architecture is one the sizing core can size, a format's block layout is whole)."""

import datetime

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.lookup import resolve
from service.catalogue.tables import Interconnect
from service.schemas.catalogue import FormatBody, GpuBody, ModelBody
from service.sizing.errors import SizingError, require
from service.sizing.models import ModelSpec, validate_model


def check_prices(data: GpuBody) -> None:
    """Prices are dated by a real day and need a currency; else 422 (the schema bounds them)."""
    for name in ("hourly_price_cents", "purchase_price_cents"):
        value = getattr(data, name)
        require(value is None or data.currency is not None, "currency", f"{name} needs one")
    if data.price_observed_on is not None:
        try:
            datetime.date.fromisoformat(data.price_observed_on)
        except ValueError:
            raise SizingError("price_observed_on", "must be a calendar date, YYYY-MM-DD") from None


async def check_gpu(session: AsyncSession, data: GpuBody) -> GpuBody:
    """Link slugs must name interconnects (aliases resolve to the slug); else 422."""
    check_prices(data)
    changes = {}
    for field in ("nvlink", "host_link"):
        value = getattr(data, field)
        if value is not None:
            row = await resolve(session, Interconnect, value, field, status=422)
            changes[field] = row.slug
    return msgspec.structs.replace(data, **changes)


def check_model(data: ModelBody) -> ModelBody:
    if data.active_params == 0:
        data = msgspec.structs.replace(data, active_params=data.total_params)  # dense
    spec_fields = {
        k: v for k, v in msgspec.structs.asdict(data).items() if k in ModelSpec.__struct_fields__
    }
    spec_fields["layer_types"] = tuple(data.layer_types)
    spec_fields["rope_cache_rows"] = tuple(data.rope_cache_rows)
    try:
        validate_model(ModelSpec(**spec_fields), field="body")
    except SizingError as exc:
        raise SizingError(exc.field.removeprefix("body."), exc.message) from None
    require(
        data.active_params_incl_embedding <= data.total_params,
        "active_params_incl_embedding",
        "cannot exceed total_params",
    )
    return data


def check_format(data: FormatBody) -> FormatBody:
    if not data.block_size:
        for name in ("scale_bits", "zero_point_bits", "super_block_size", "super_scale_bits"):
            require(getattr(data, name) == 0, name, "needs a block_size (values sharing a scale)")
    require(
        bool(data.super_block_size) == bool(data.super_scale_bits),
        "super_scale_bits",
        "super_block_size and super_scale_bits go together",
    )
    return data
