"""The shipped catalogue without a database: the rows the migrations ship, in memory, and what
POST /plan, /matrix and /offload answer on them. The CLI answers offline through it, and the
accuracy reports and benchmarks read it, with the same converters and answer functions the
server uses."""

import json
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from service.catalogue.cache import snapshot_of
from service.catalogue.convert import gpu_price_of
from service.catalogue.tables import Format, Gpu, Interconnect, Model
from service.plans.compute import answer_matrix, answer_offload
from service.plans.evaluate import answer_plan, model_from_config, weight_format_of
from service.schemas.compute import DEFAULT_MATRIX_FORMATS, MatrixRequest, OffloadRequest
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.cost import CostedMatrix, GpuPrice
from service.sizing.errors import require
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec
from service.sizing.offload import Offload

DATA = Path(__file__).resolve().parent / "catalogue" / "data"
SHIPPED: tuple[tuple[type[Any], tuple[str, ...]], ...] = (
    (Interconnect, ("interconnects.json",)),
    (Gpu, ("gpus.json", "gpus_0013.json")),  # rows of migrations 0002 and 0013
    (Model, ("models.json", "models_0007.json", "models_0012.json", "models_0013.json")),
    (Format, ("formats.json",)),
)
UPDATES: dict[type[Any], str] = {Model: "model_updates.json", Gpu: "gpu_updates.json"}
"""Later revisions' corrections of shipped rows, as the migrations apply them."""
Row = TypeVar("Row", Gpu, Interconnect, Model, Format)


def _column_defaults(table: type[Row]) -> dict[str, Any]:
    """What an INSERT would fill in for a missing value (the rows here are never inserted)."""
    defaults: dict[str, Any] = {}
    for column in table.__table__.columns:
        default = column.default
        if default is None or not hasattr(default, "arg"):
            continue
        arg = default.arg
        defaults[column.key] = arg(None) if callable(arg) else arg
    return defaults


def _load(file_name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((DATA / file_name).read_text(encoding="utf-8"))
    return loaded


def _rows(table: type[Row], file_names: tuple[str, ...]) -> list[Row]:
    columns = set(table.__table__.columns.keys())
    defaults = _column_defaults(table)
    data = [row for name in file_names for row in _load(name)]
    by_slug: dict[str, dict[str, Any]] = {}
    for update in _load(UPDATES[table]) if table in UPDATES else []:
        by_slug.setdefault(update["slug"], {}).update(update["values"])
    data = [{**row, **by_slug.get(row["slug"], {})} for row in data]
    rows = [table(**{**defaults, **{k: v for k, v in row.items() if k in columns}}) for row in data]
    return sorted(rows, key=lambda r: r.slug)


class LocalCatalogue:
    """The rows the migrations ship (0002, 0007's additions, the corrections of 0007, 0008,
    0010 and 0011), as the server's catalogue cache holds them: resolved by slug or alias the
    way the server resolves."""

    def __init__(self) -> None:
        self.snapshot = snapshot_of({t.__tablename__: _rows(t, f) for t, f in SHIPPED})

    def gpu(self, name: str, field: str = "gpu") -> GpuSpec:
        return self.snapshot.gpu_spec(name, field)

    def all_gpus(self) -> list[GpuSpec]:
        return self.snapshot.all_gpu_specs()

    def prices(self) -> dict[str, GpuPrice]:
        return {row.slug: gpu_price_of(row) for row in self.snapshot.rows[Gpu.__tablename__]}

    def model(self, name: str, field: str = "model") -> ModelSpec:
        return self.snapshot.model_spec(name, field)

    def number_format(self, name: str, field: str) -> NumberFormat:
        return self.snapshot.number_format(name, field)

    def formats_for(self, weight: str, kv: str | None) -> tuple[NumberFormat, NumberFormat]:
        weights = self.number_format(weight, "weight_format")
        if kv is None:
            return weights, default_kv_format(weights)
        kv_format = self.number_format(kv, "kv_format")
        require(kv_format.kv_capable, "kv_format", f"{kv_format.slug} cannot hold a KV cache")
        return weights, kv_format


@cache
def local_catalogue() -> LocalCatalogue:
    return LocalCatalogue()


def local_plan(request: PlanRequest) -> PlanAnswer | TrainingAnswer:
    """What POST /plan answers for ``request`` on the shipped catalogue."""
    cat = local_catalogue()
    if request.config_json is not None:
        model = model_from_config(request.config_json)
    else:
        require(request.model is not None, "model", "name a catalogue model or give --config")
        assert request.model is not None
        model = cat.model(request.model)
    gpus = [cat.gpu(request.gpu)] if request.gpu is not None else cat.all_gpus()
    weight_slug = weight_format_of(request.weight_format, model.checkpoint_format)
    weights, kv = cat.formats_for(weight_slug, request.kv_format)
    return answer_plan(request, model, gpus, weights, kv, cat.prices())


def local_matrix(request: MatrixRequest) -> CostedMatrix:
    """What POST /matrix answers for ``request`` on the shipped catalogue."""
    cat = local_catalogue()
    models = [cat.model(s, "models") for s in request.models] or cat.snapshot.all_model_specs()
    gpus = [cat.gpu(s, "gpus") for s in request.gpus] or cat.all_gpus()
    formats = [cat.number_format(s, "formats") for s in (request.formats or DEFAULT_MATRIX_FORMATS)]
    kv = None
    if request.kv_format is not None:
        kv = cat.number_format(request.kv_format, "kv_format")
    return answer_matrix(request, models, formats, gpus, kv, cat.prices())


def local_offload(request: OffloadRequest) -> Offload:
    """What POST /offload answers for ``request`` on the shipped catalogue."""
    cat = local_catalogue()
    model = cat.model(request.model)
    gpu = cat.gpu(request.gpu)
    weights, kv = cat.formats_for(request.weight_format, request.kv_format)
    link = None if request.link is None else cat.snapshot.link_spec(request.link)
    return answer_offload(request, model, gpu, weights, kv, link)
