"""The shipped catalogue without a database: the rows the migrations ship, in memory, and what
POST /plan, /matrix and /offload answer on them. The CLI answers offline through it, and the
accuracy reports and benchmarks read it, with the same converters and answer functions the
server uses."""

import json
from functools import cache
from pathlib import Path
from typing import Any

from service.catalogue.memory import snapshot_of
from service.plans.compute import answer_matrix, answer_offload
from service.plans.evaluate import answer_plan, model_from_config, weight_format_of
from service.schemas.compute import DEFAULT_MATRIX_FORMATS, MatrixRequest, OffloadRequest
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.schemas.speed import SpeedAnswer, SpeedRequest
from service.sizing.cost import CostedMatrix, GpuPrice
from service.sizing.errors import require
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec, validate_model
from service.sizing.offload import Offload

DATA = Path(__file__).resolve().parent / "catalogue" / "data"
SHIPPED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("interconnects", ("interconnects.json", "interconnects_0014.json")),  # migrations 0002, 0014
    ("gpus", ("gpus.json", "gpus_0013.json", "gpus_0014.json")),  # migrations 0002, 0013, 0014
    # rows of migrations 0002, 0007, 0012 and 0013
    ("models", ("models.json", "models_0007.json", "models_0012.json", "models_0013.json")),
    ("number_formats", ("formats.json",)),
)
UPDATES: dict[str, str] = {"models": "model_updates.json", "gpus": "gpu_updates.json"}
"""Later revisions' corrections of shipped rows, as the migrations apply them."""
_SHARED = ("slug", "name", "aliases", "notes", "sources")
COLUMNS: dict[str, tuple[str, ...]] = {
    "interconnects": (*_SHARED, "kind", "bytes_per_s_per_direction"),
    "gpus": (
        *_SHARED,
        *("vendor", "architecture", "memory_type", "memory_bytes", "driver_visible_bytes"),
        *("hbm_bytes_per_s", "nvlink", "host_link", "fp8", "fp4", "gpus_per_node"),
        *("bf16_dense_tflops", "fp8_dense_tflops", "tdp_w", "currency", "hourly_price_cents"),
        *("purchase_price_cents", "price_observed_on", "price_source", "pcie_peer_to_peer"),
        *("fp4_dense_tflops", "torch_visible_bytes"),
    ),
    "models": (
        *_SHARED,
        *("total_params", "active_params", "active_params_incl_embedding", "layers"),
        *("hidden_size", "intermediate_size", "attention_heads", "kv_heads", "head_dim"),
        *("vocab_size", "max_context_tokens", "experts", "experts_per_token", "kv_lora_rank"),
        *("qk_rope_head_dim", "sliding_window_tokens", "layer_types", "checkpoint_format"),
        *("checkpoint_bytes", "replicated_params", "rope_cache_rows", "linear_key_heads"),
        *("linear_value_heads", "linear_key_head_dim", "linear_value_head_dim"),
        *("linear_conv_kernel", "rotary_dim", "q_lora_rank", "dense_layers"),
        *("dense_intermediate_size", "architecture"),
    ),
    "number_formats": (
        *_SHARED,
        *("value_bits", "block_size", "scale_bits", "zero_point_bits", "super_block_size"),
        *("super_scale_bits", "needs", "kv_capable", "description"),
    ),
}
"""The catalogue tables' columns (service/catalogue/tables.py, bookkeeping aside): a test
keeps the two equal. Spelled out so the offline CLI never imports the ORM."""
_SHARED_DEFAULTS: dict[str, Any] = {"name": "", "aliases": [], "notes": "", "sources": []}
_ZERO_MODEL_COLUMNS = (
    *("active_params_incl_embedding", "intermediate_size", "head_dim", "vocab_size", "experts"),
    *("experts_per_token", "kv_lora_rank", "qk_rope_head_dim", "sliding_window_tokens"),
    *("checkpoint_bytes", "replicated_params", "linear_key_heads", "linear_value_heads"),
    *("linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel", "rotary_dim"),
    *("q_lora_rank", "dense_layers", "dense_intermediate_size"),
)
DEFAULTS: dict[str, dict[str, Any]] = {
    "interconnects": _SHARED_DEFAULTS,
    "gpus": {
        **_SHARED_DEFAULTS,
        **{"vendor": "", "architecture": "", "memory_type": "", "driver_visible_bytes": 0},
        **{"fp8": False, "fp4": False, "gpus_per_node": 8, "bf16_dense_tflops": 0.0},
        **{"fp8_dense_tflops": 0.0, "tdp_w": 0, "price_source": "", "pcie_peer_to_peer": True},
        **{"fp4_dense_tflops": 0.0, "torch_visible_bytes": 0},
    },
    "models": {
        **_SHARED_DEFAULTS,
        **dict.fromkeys(_ZERO_MODEL_COLUMNS, 0),
        **{"layer_types": [], "rope_cache_rows": [], "checkpoint_format": "", "architecture": ""},
    },
    "number_formats": {
        **_SHARED_DEFAULTS,
        **{"block_size": 0, "scale_bits": 0, "zero_point_bits": 0, "super_block_size": 0},
        **{"super_scale_bits": 0, "needs": "any", "kv_capable": False, "description": ""},
    },
}
"""What an INSERT fills in for a missing value (the tables' column defaults; a test keeps them
equal); a column without one is None, as on an unsaved ORM row."""


class ShippedRow:
    """One shipped row: every column of its table as an attribute, like an ORM row (a column
    the row and the defaults leave out is None); the converters read it the same way."""

    def __init__(self, table: str, values: dict[str, Any]) -> None:
        self.__dict__.update(dict.fromkeys(COLUMNS[table]))
        for name, default in DEFAULTS[table].items():
            self.__dict__[name] = list(default) if isinstance(default, list) else default
        self.__dict__.update({k: v for k, v in values.items() if k in self.__dict__})

    slug: str


def _load(file_name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((DATA / file_name).read_text(encoding="utf-8"))
    return loaded


def _rows(table: str, file_names: tuple[str, ...]) -> list[ShippedRow]:
    data = [row for name in file_names for row in _load(name)]
    by_slug: dict[str, dict[str, Any]] = {}
    for update in _load(UPDATES[table]) if table in UPDATES else []:
        by_slug.setdefault(update["slug"], {}).update(update["values"])
    data = [{**row, **by_slug.get(row["slug"], {})} for row in data]
    return sorted((ShippedRow(table, row) for row in data), key=lambda r: r.slug)


class LocalCatalogue:
    """The rows the migrations ship (0002, 0007's additions, the corrections of 0007, 0008,
    0010, 0011, 0015, 0016 and 0017), as the server's catalogue cache holds them: resolved by
    slug or alias the way the server resolves."""

    def __init__(self) -> None:
        self.snapshot = snapshot_of({t: _rows(t, f) for t, f in SHIPPED})

    def gpu(self, name: str, field: str = "gpu") -> GpuSpec:
        return self.snapshot.gpu_spec(name, field)

    def all_gpus(self) -> list[GpuSpec]:
        return self.snapshot.all_gpu_specs()

    def prices(self) -> dict[str, GpuPrice]:
        return self.snapshot.prices()

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


def local_speed(request: SpeedRequest) -> SpeedAnswer:
    """What POST /speed answers for ``request`` on the shipped catalogue."""
    cat = local_catalogue()
    if request.config_json is not None:
        model = model_from_config(request.config_json)
    elif request.model_spec is not None:
        model = validate_model(request.model_spec, field="model_spec")
    else:
        require(request.model is not None, "model", "name a catalogue model")
        assert request.model is not None
        model = cat.model(request.model)
    weights, kv = cat.formats_for(
        weight_format_of(request.weight_format, model.checkpoint_format), request.kv_format
    )
    from service.plans.speed import answer_speed  # the serving model, only for speed

    return answer_speed(request, model, cat.gpu(request.gpu), weights, kv)


def local_offload(request: OffloadRequest) -> Offload:
    """What POST /offload answers for ``request`` on the shipped catalogue."""
    cat = local_catalogue()
    model = cat.model(request.model)
    gpu = cat.gpu(request.gpu)
    weights, kv = cat.formats_for(request.weight_format, request.kv_format)
    link = None if request.link is None else cat.snapshot.link_spec(request.link)
    return answer_offload(request, model, gpu, weights, kv, link)
