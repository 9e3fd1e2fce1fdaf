"""A plan request evaluated against the catalogue: the one path shared by POST /plan and the
saved plans of /plans (which store the request, this answer and the rows it used)."""

import functools
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from service.plans.compute import workload_of
from service.schemas.plan import (
    PlanAnswer,
    PlanOption,
    PlanRequest,
    TrainingAnswer,
    TrainingPerGpu,
)
from service.sizing.advice import WEIGHT_FORMAT_FROM_CHECKPOINT, PlanWarning
from service.sizing.cost import (
    NO_PRICE,
    GpuPrice,
    RankBy,
    plan_cost,
    rank_plans,
    ranking_rule,
)
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.models import ModelSpec, validate_model
from service.sizing.parallel import default_splits
from service.sizing.plan import Workload, plan
from service.sizing.ranking import STATUS_ORDER, rank_gpus
from service.sizing.spare import spare_status
from service.sizing.training import (
    TRAINING_GPU_COUNTS,
    TrainingPlan,
    get_recipe,
    training_plan,
)
from service.sizing.vllm.options import VllmOptions

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

# The database lookups (service.catalogue.lookup, .prices), the config.json importer and
# service.plans.served (worker threads) are imported where they are used: the offline CLI plans
# through this module without SQLAlchemy or anyio.


def model_from_config(config_json: dict[str, Any]) -> ModelSpec:
    """An inline config.json as a plannable spec, named after its ``_name_or_path``."""
    from service.catalogue.hf_config import import_config  # its tables: only for a config.json

    name = str(config_json.get("_name_or_path") or "imported-model")
    return import_config(config_json, slug=name.rsplit("/", 1)[-1].lower()).spec


def model_source(
    slug: str | None, inline: ModelSpec | None, config_json: dict[str, Any] | None
) -> Literal["model", "model_spec", "config_json"]:
    """Which of the three ways to name a model the request used (exactly one is allowed)."""
    given = [
        name
        for name, value in (("model", slug), ("model_spec", inline), ("config_json", config_json))
        if value is not None
    ]
    if len(given) != 1:
        raise SizingError(
            "model",
            "give exactly one of model (a catalogue slug), model_spec (an architecture) or "
            "config_json (a Hugging Face config.json)",
        )
    source: Literal["model", "model_spec", "config_json"] = given[0]  # type: ignore[assignment]
    return source


def inline_model(inline: ModelSpec | None, config_json: dict[str, Any] | None) -> ModelSpec:
    """A model given in the request itself: an architecture, or a config.json to import."""
    if inline is not None:
        return validate_model(inline, field="model_spec")
    assert config_json is not None
    return model_from_config(config_json)


async def resolve_model(
    session: "AsyncSession",
    slug: str | None,
    inline: ModelSpec | None,
    config_json: dict[str, Any] | None = None,
) -> ModelSpec:
    if model_source(slug, inline, config_json) != "model":
        return inline_model(inline, config_json)
    assert slug is not None
    from service.catalogue import lookup

    return await lookup.model_spec(session, slug)


def weight_format_of(requested: str | None, checkpoint_format: str) -> str:
    """The weight format a request sizes: the one it names, else the model's checkpoint as
    published (its ``checkpoint_format``), else bf16."""
    return requested or checkpoint_format or "bf16"


def checkpoint_warnings(
    requested: str | None, model: ModelSpec, weights: NumberFormat
) -> list[PlanWarning]:
    """Say so when the weights' format came from the checkpoint rather than the request."""
    if requested is not None or weights.slug != model.checkpoint_format:
        return []
    return [
        PlanWarning(
            code=WEIGHT_FORMAT_FROM_CHECKPOINT,
            message=f"No weight_format given: sized in {weights.slug}, the format the "
            f"checkpoint is published in ({model.checkpoint_bytes:,} B stored); name "
            "weight_format (e.g. bf16) to size another.",
        )
    ]


async def resolve_formats(
    session: "AsyncSession", weight_slug: str, kv_slug: str | None
) -> tuple[NumberFormat, NumberFormat]:
    from service.catalogue import lookup

    weights = await lookup.number_format(session, weight_slug, "weight_format")
    if kv_slug is None:
        return weights, default_kv_format(weights)
    kv = await lookup.number_format(session, kv_slug, "kv_format")
    require(kv.kv_capable, "kv_format", f"{kv.slug} cannot hold a KV cache")
    return weights, kv


async def resolve_gpus(session: "AsyncSession", slug: str | None) -> list[GpuSpec]:
    from service.catalogue import lookup

    if slug is not None:
        return [await lookup.gpu_spec(session, slug)]
    return await lookup.all_gpu_specs(session)


def _training_answer(data: PlanRequest, p: TrainingPlan) -> TrainingAnswer:
    m = p.memory
    return TrainingAnswer(
        workload=data.workload,
        model=p.model,
        gpu=p.gpu,
        fits=p.fits,
        status=spare_status(p.spare_fraction),
        gpu_count=p.gpu_count,
        zero_stage=m.zero_stage,
        trainable_params=m.trainable_params,
        model_state_bytes=m.model_state_bytes,
        total_bytes=m.total_bytes,
        budget_bytes=p.budget_bytes_per_gpu * p.gpu_count,
        spare_bytes=p.spare_bytes_per_gpu * p.gpu_count,
        spare_fraction=p.spare_fraction,
        per_gpu=TrainingPerGpu(
            budget_bytes=p.budget_bytes_per_gpu,
            weights_bytes=m.weights_bytes_per_gpu,
            gradients_bytes=m.gradients_bytes_per_gpu,
            optimizer_bytes=m.optimizer_bytes_per_gpu,
            activations_bytes=m.activations_bytes_per_gpu,
            total_bytes=m.total_bytes_per_gpu,
            spare_bytes=p.spare_bytes_per_gpu,
        ),
        memory=m,
    )


def _train(
    data: PlanRequest, model: ModelSpec, gpus: list[GpuSpec], workload: Workload
) -> TrainingAnswer:
    if data.workload == "training":
        mode, recipe = "full", get_recipe(data.recipe)
    else:
        mode, recipe = data.workload, None
    answers = [
        _training_answer(
            data,
            training_plan(
                model,
                gpu,
                workload,
                mode=mode,  # type: ignore[arg-type]
                recipe=recipe,
                zero_stage=data.zero_stage,
                activation_fraction=data.activation_fraction,
                lora_rank=data.lora_rank,
                lora_targets=data.lora_targets,
                gpu_counts=tuple(data.splits) if data.splits else TRAINING_GPU_COUNTS,
            ),
        )
        for gpu in gpus
    ]
    answers.sort(key=lambda a: (STATUS_ORDER[a.status], a.gpu_count, -a.spare_fraction))
    if len(gpus) == 1:
        return answers[0]
    return msgspec.structs.replace(answers[0], options=answers)


def answer_plan(
    data: PlanRequest,
    model: ModelSpec,
    gpus: list[GpuSpec],
    weights: NumberFormat,
    kv: NumberFormat,
    prices: dict[str, GpuPrice],
) -> "PlanAnswer | TrainingAnswer":
    """The sizing core on resolved specs (the server and the CLI's local mode share this),
    with the request's ``traffic`` planned on the same GPUs."""
    answer = _memory_plan(data, model, gpus, weights, kv, prices)
    if data.traffic is None:
        return answer
    require(data.workload == "inference", "traffic", "traffic plans inference only")
    from service.plans.serving import traffic_plan  # only for traffic (see answer_matrix)

    planned = traffic_plan(
        data.traffic,
        model,
        gpus,
        weights,
        kv,
        prices,
        options=data.vllm,
        context_tokens=data.context_tokens,
        utilisation=data.gpu_memory_utilization,
        splits=data.splits,
    )
    return msgspec.structs.replace(answer, traffic=planned)  # type: ignore[type-var]


@functools.lru_cache(maxsize=1024)
def _one_gpu_answer(
    model: ModelSpec,
    gpu: GpuSpec,
    weights: NumberFormat,
    kv: NumberFormat,
    workload: Workload,
    requested_format: str | None,
    price: GpuPrice | None,
    rank_by: RankBy,
) -> PlanAnswer:
    """A seed plan on one GPU as POST /plan answers it, remembered like ``plan`` (its inputs
    are frozen Structs; callers copy what they change): a repeated question costs a lookup."""
    best = plan(model, gpu, weights, kv, workload)
    found = msgspec.structs.asdict(best)
    found["warnings"] = [*checkpoint_warnings(requested_format, model, weights), *best.warnings]
    priced = {best.gpu: price} if price is not None else {}
    return PlanAnswer(**found, cost=plan_cost(best, priced), rank_by=rank_by)


def _memory_plan(
    data: PlanRequest,
    model: ModelSpec,
    gpus: list[GpuSpec],
    weights: NumberFormat,
    kv: NumberFormat,
    prices: dict[str, GpuPrice],
) -> "PlanAnswer | TrainingAnswer":
    require(
        data.workload == "inference" or data.rank_by == "gpus",
        "rank_by",
        "costs rank inference plans only; use gpus for training",
    )
    workload = workload_of(data)
    if data.workload != "inference":
        require(data.method == "seed", "method", "the vllm method plans inference only")
        return _train(data, model, gpus, workload)
    if data.method == "vllm":
        from service.sizing.vllm.plan import vllm_plan  # the vLLM method's core: only for it

        require(data.gpu is not None, "gpu", "the vllm method needs one gpu")
        answer = vllm_plan(
            model,
            gpus[0],
            weights,
            kv,
            data.vllm or VllmOptions(),
            users=data.concurrency,
            context_tokens=data.context_tokens,
            utilisation=data.gpu_memory_utilization,
            splits=workload.splits or default_splits(gpus[0].gpus_per_node, max_nodes=1),
        )
        return msgspec.structs.replace(  # type: ignore[return-value]
            answer, warnings=checkpoint_warnings(data.weight_format, model, weights)
        )
    if data.gpu is not None:
        price = prices.get(gpus[0].slug)
        return _one_gpu_answer(
            model, gpus[0], weights, kv, workload, data.weight_format, price, data.rank_by
        )
    plans = rank_gpus(model, gpus, weights, kv, workload)
    require(bool(plans), "splits", "no GPU in the catalogue can split this model that way")
    costs = [plan_cost(p, prices) for p in plans]
    order, unpriced = rank_plans(plans, costs, data.rank_by)
    options = [PlanOption(**msgspec.structs.asdict(plans[i]), cost=costs[i]) for i in order]
    top = msgspec.structs.asdict(options[0])
    top["warnings"] = [*checkpoint_warnings(data.weight_format, model, weights), *top["warnings"]]
    if unpriced:
        kind = "an hourly" if data.rank_by == "hourly_cost" else "a purchase"
        top["warnings"] = [
            *top["warnings"],
            PlanWarning(
                code=NO_PRICE,
                message=f"Ranked by {data.rank_by.replace('_', ' ')}: {', '.join(unpriced)} "
                f"{'has' if len(unpriced) == 1 else 'have'} no {kind} price in the catalogue "
                "and come after the priced GPUs.",
            ),
        ]
    return PlanAnswer(
        **top,
        options=options,
        rank_by=data.rank_by,
        ranking_rule=ranking_rule(data.rank_by),
        unpriced_gpus=unpriced,
    )


async def evaluate_plan(
    session: "AsyncSession", data: PlanRequest
) -> "PlanAnswer | TrainingAnswer":
    """Look the request's names up in the catalogue and run the sizing core on them."""
    model = await resolve_model(session, data.model, data.model_spec, data.config_json)
    gpus = await resolve_gpus(session, data.gpu)
    weight_slug = weight_format_of(data.weight_format, model.checkpoint_format)
    weights, kv = await resolve_formats(session, weight_slug, data.kv_format)
    from service.catalogue.prices import gpu_prices
    from service.plans.served import answer_where_cheap

    prices = await gpu_prices(session) if data.workload == "inference" else {}
    return await answer_where_cheap(data, model, gpus, weights, kv, prices)
