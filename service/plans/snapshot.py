"""The catalogue rows a plan request uses, frozen as plain JSON, and how two snapshots differ.

A saved plan keeps these so a reviewer later sees exactly what the answer was computed from,
whatever the catalogue says today. The rows are resolved the way evaluate_plan resolves them
(slug, then alias), read once, and ``answer_from`` computes the answer from those very rows.
"""

from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.convert import (
    gpu_price_of,
    gpu_spec_of,
    link_spec_of,
    model_spec_of,
    number_format_of,
)
from service.catalogue.lookup import resolve
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.plans.evaluate import answer_plan, inline_model, model_source, weight_format_of
from service.plans.records import CatalogueChange
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.errors import require
from service.sizing.formats import default_kv_format
from service.sizing.models import ModelSpec

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
    if model_source(request.model, request.model_spec, request.config_json) == "model":
        assert request.model is not None
        row = await resolve(session, Model, request.model, "model")
        snapshot["model"] = row_values(row)
        checkpoint = row.checkpoint_format
    else:
        # The architecture the answer is sized on (a config.json as the importer reads it).
        spec = inline_model(request.model_spec, request.config_json)
        snapshot["model_spec"] = msgspec.to_builtins(spec)
        checkpoint = spec.checkpoint_format
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
    weight_slug = weight_format_of(request.weight_format, checkpoint)
    weights = await resolve(session, Format, weight_slug, "weight_format")
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


def answer_from(request: PlanRequest, snapshot: Snapshot) -> "PlanAnswer | TrainingAnswer":
    """The sizing core on exactly the rows ``snapshot`` holds (what POST /plan answers for the
    same request and catalogue)."""
    if "model" in snapshot:
        model = model_spec_of(Model(**snapshot["model"]))
    else:
        model = msgspec.convert(snapshot["model_spec"], ModelSpec)
    links = {row["slug"]: link_spec_of(Interconnect(**row)) for row in snapshot["interconnects"]}
    gpu_rows = [Gpu(**row) for row in snapshot["gpus"]]
    weights = number_format_of(Format(**snapshot["weight_format"]))
    if request.kv_format is None:
        kv = default_kv_format(weights)
    else:
        kv = number_format_of(Format(**snapshot["kv_format"]))
        require(kv.kv_capable, "kv_format", f"{kv.slug} cannot hold a KV cache")
    prices = {row.slug: gpu_price_of(row) for row in gpu_rows}
    gpus = [gpu_spec_of(row, links) for row in gpu_rows]
    return answer_plan(request, model, gpus, weights, kv, prices)


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
