"""POST /plan on the serving snapshot: the names resolved in memory (no session, no await),
and the answer computed on the event loop when it is as cheap as one seed plan on one GPU,
else in a worker thread (service.plans.threads)."""

from typing import Any, Protocol

from service.catalogue.memory import MAX_RESOLVED
from service.plans.evaluate import (
    answer_plan,
    inline_model,
    model_source,
    weight_format_of,
)
from service.plans.threads import off_loop
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.cost import GpuPrice
from service.sizing.errors import require
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec


class Catalogue(Protocol):
    """The catalogue as the computations read it: the serving snapshot
    (service.catalogue.memory.Snapshot), or the shipped rows offline."""

    def model_spec(self, name: str, field: str = "model") -> ModelSpec: ...
    def gpu_spec(self, name: str, field: str = "gpu") -> GpuSpec: ...
    def all_gpu_specs(self) -> list[GpuSpec]: ...
    def number_format(self, name: str, field: str) -> NumberFormat: ...
    def prices(self) -> dict[str, GpuPrice]: ...
    @property
    def resolved(self) -> dict[Any, Any]: ...


def specs_from(
    catalogue: Catalogue, data: PlanRequest
) -> tuple[ModelSpec, list[GpuSpec], NumberFormat, NumberFormat, dict[str, GpuPrice]]:
    """evaluate_plan's lookups, in its order (so the same name is blamed first), on an
    in-memory catalogue: no session, no await. A catalogue model's lookups are remembered in
    the snapshot by the names given (only those that resolved: an error is raised again)."""
    named = data.model_spec is None and data.config_json is None and data.model is not None
    key = (data.model, data.gpu, data.weight_format, data.kv_format)
    memo = catalogue.resolved
    found = memo.get(key) if named else None
    if found is None:
        found = _resolve(catalogue, data)
        if named and len(memo) < MAX_RESOLVED:
            memo[key] = found
    model, gpus, weights, kv = found
    prices = catalogue.prices() if data.workload == "inference" else {}
    return model, list(gpus), weights, kv, prices


def _resolve(
    catalogue: Catalogue, data: PlanRequest
) -> tuple[ModelSpec, tuple[GpuSpec, ...], NumberFormat, NumberFormat]:
    if model_source(data.model, data.model_spec, data.config_json) == "model":
        assert data.model is not None
        model = catalogue.model_spec(data.model)
    else:
        model = inline_model(data.model_spec, data.config_json)
    gpus = (
        (catalogue.gpu_spec(data.gpu),) if data.gpu is not None else (*catalogue.all_gpu_specs(),)
    )
    weights = catalogue.number_format(
        weight_format_of(data.weight_format, model.checkpoint_format), "weight_format"
    )
    if data.kv_format is None:
        kv = default_kv_format(weights)
    else:
        kv = catalogue.number_format(data.kv_format, "kv_format")
        require(kv.kv_capable, "kv_format", f"{kv.slug} cannot hold a KV cache")
    return model, gpus, weights, kv


async def evaluate_cached(catalogue: Catalogue, data: PlanRequest) -> "PlanAnswer | TrainingAnswer":
    """evaluate_plan on the serving snapshot (POST /plan): the same answer, without a
    database session."""
    return await answer_where_cheap(data, *specs_from(catalogue, data))


INLINE_LAYOUTS = 16
"""A seed plan on one GPU lays the model out on at most this many splits (the default ladder
is 6): tens of microseconds, less than the hop to a worker thread, so it runs on the loop."""

INLINE_PREDICTIONS = 8
"""A vllm plan on one GPU predicts at most this many splits (the default ladder is 4 inside an
8-GPU node): about 60 us a prediction the first time, a few microseconds once remembered
(``predict_vllm``), so it runs on the loop too: under a millisecond at worst (0.7 ms for
DeepSeek-V3 on H100 with eight splits, none remembered)."""


async def answer_where_cheap(
    data: PlanRequest,
    model: ModelSpec,
    gpus: list[GpuSpec],
    weights: NumberFormat,
    kv: NumberFormat,
    prices: dict[str, GpuPrice],
) -> "PlanAnswer | TrainingAnswer":
    """answer_plan on the loop when it is as cheap as a plan on one GPU, else in a worker
    thread (service.plans.threads: a ranking, training or traffic plan never holds up the
    other requests)."""
    cheap = (
        data.workload == "inference"
        and len(gpus) == 1
        and len(data.splits or ())
        <= (INLINE_LAYOUTS if data.method == "seed" else INLINE_PREDICTIONS)
        and data.traffic is None  # a traffic plan predicts every layout's serving curve
    )
    if cheap:
        return answer_plan(data, model, gpus, weights, kv, prices)
    return await off_loop(answer_plan, data, model, gpus, weights, kv, prices)
