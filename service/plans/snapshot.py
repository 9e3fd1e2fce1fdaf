"""The catalogue rows a plan request uses, frozen as plain JSON, and how two snapshots differ.

A saved plan keeps these so a reviewer later sees exactly what the answer was computed from,
whatever the catalogue says today. The rows are resolved the way evaluate_plan resolves them
(slug, then alias), inside the same transaction, so they are the rows it used.
"""

from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.convert import number_format_of
from service.catalogue.lookup import resolve
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.plans.evaluate import PlanRequest, model_from_config
from service.plans.records import CatalogueChange
from service.sizing.formats import default_kv_format

Snapshot = dict[str, Any]
BOOKKEEPING = frozenset({"id", "created_at", "updated_at"})
"""Not part of what a row says: a catalogue edit changes updated_at even when nothing else does."""


def row_values(row: Gpu | Interconnect | Model | Format) -> dict[str, Any]:
    return {
        column.key: getattr(row, column.key)
        for column in row.__table__.columns
        if column.key not in BOOKKEEPING
    }


async def take(session: AsyncSession, request: PlanRequest) -> Snapshot:
    snapshot: Snapshot = {}
    if request.model_spec is not None:
        snapshot["model_spec"] = msgspec.to_builtins(request.model_spec)
    elif request.config_json is not None:
        # The architecture the answer was sized on, as the importer reads the config.json.
        snapshot["model_spec"] = msgspec.to_builtins(model_from_config(request.config_json))
    else:
        assert request.model is not None  # evaluate_plan has already checked exactly one is set
        snapshot["model"] = row_values(await resolve(session, Model, request.model, "model"))
    if request.gpu is not None:
        gpus = [await resolve(session, Gpu, request.gpu, "gpu")]
    else:
        gpus = list((await session.scalars(select(Gpu).order_by(Gpu.slug))).all())
    snapshot["gpus"] = [row_values(row) for row in gpus]
    link_slugs = sorted({slug for row in gpus for slug in (row.nvlink, row.host_link) if slug})
    links = await session.scalars(
        select(Interconnect).where(Interconnect.slug.in_(link_slugs)).order_by(Interconnect.slug)
    )
    snapshot["interconnects"] = [row_values(row) for row in links]
    weights = await resolve(session, Format, request.weight_format, "weight_format")
    snapshot["weight_format"] = row_values(weights)
    if request.kv_format is not None:
        kv = await resolve(session, Format, request.kv_format, "kv_format")
        snapshot["kv_format"] = row_values(kv)
    else:
        kv_default = default_kv_format(number_format_of(weights))
        # 16-bit weights keep their own format for the cache (that row); otherwise evaluate_plan's
        # default comes from the core's format table, not from a catalogue row.
        snapshot["kv_format"] = (
            row_values(weights)
            if kv_default.slug == weights.slug
            else msgspec.to_builtins(kv_default)
        )
    return snapshot


def _rows(snapshot: Snapshot) -> dict[str, dict[str, Any]]:
    """Every row of a snapshot under a stable name: ``gpus/h100-sxm``, ``weight_format/bf16``."""
    named: dict[str, dict[str, Any]] = {}
    for key, value in snapshot.items():
        for row in value if isinstance(value, list) else [value]:
            named[f"{key}/{row.get('slug', '')}"] = row
    return named


def differences(before: Snapshot, after: Snapshot) -> list[CatalogueChange]:
    """Row by row and field by field: what changed in the catalogue since the snapshot."""
    old, new = _rows(before), _rows(after)
    changes = []
    for name in sorted(old.keys() | new.keys()):
        if name not in new or name not in old:
            changes.append(
                CatalogueChange(row=name, field="(row)", before=old.get(name), after=new.get(name))
            )
            continue
        for field in sorted(old[name].keys() | new[name].keys()):
            if old[name].get(field) != new[name].get(field):
                changes.append(
                    CatalogueChange(
                        row=name,
                        field=field,
                        before=old[name].get(field),
                        after=new[name].get(field),
                    )
                )
    return changes
