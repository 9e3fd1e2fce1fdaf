"""The computations: POST /plan, GET|POST /matrix, POST /offload.

Each handler parses, looks the names up in the catalogue, calls the sizing core and renders
(JSON by default; markdown on Accept: text/markdown; CSV on /matrix with Accept: text/csv).
"""

from dataclasses import dataclass
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, Schema
from litestar.params import JSONBody, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.compute_schemas import (
    MatrixRequest,
    OffloadRequest,
    PlanAnswer,
    PlanRequest,
    TrainingAnswer,
    TrainingPerGpu,
)
from service.api.guards import open_unless_required
from service.api.problems import problems
from service.api.render import matrix_csv, matrix_markdown, offload_markdown, plan_markdown
from service.catalogue import lookup
from service.sizing.errors import SizingError, require
from service.sizing.formats import NumberFormat, default_kv_format
from service.sizing.hardware import GpuSpec
from service.sizing.matrix import build_matrix
from service.sizing.models import ModelSpec, validate_model
from service.sizing.offload import Offload, offload
from service.sizing.plan import Workload, plan, rank_gpus, spare_status
from service.sizing.training import (
    TRAINING_GPU_COUNTS,
    TrainingPlan,
    get_recipe,
    training_plan,
)

Session = NamedDependency[AsyncSession]
OPEN = [open_unless_required("viewer")]
COMPUTE_ERRORS = problems(400, 401, 403, 404, 413, 422)
MARKDOWN, CSV, JSON = "text/markdown", "text/csv", "application/json"
DEFAULT_MATRIX_FORMATS = ("bf16", "fp8", "int4")


def _also_served_as(*media_types: str) -> type[Operation]:
    """An OpenAPI operation whose 200 answer also lists the text renderings."""

    @dataclass
    class TextRenderings(Operation):
        def __post_init__(self) -> None:
            ok = (self.responses or {}).get("200")
            content = getattr(ok, "content", None)
            if content is not None:
                for media_type in media_types:
                    content[media_type] = OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING))

    return TextRenderings


def _wants(request: Request[Any, Any, Any], *offered: str) -> str:
    return request.accept.best_match([JSON, *offered], default=JSON)


async def _model(session: AsyncSession, slug: str | None, inline: Any) -> ModelSpec:
    if (slug is None) == (inline is None):
        raise SizingError(
            "model", "give exactly one of model (a catalogue slug) or model_spec (an architecture)"
        )
    if inline is not None:
        spec = msgspec.convert(inline, ModelSpec, from_attributes=True)
        return validate_model(spec, field="model_spec")
    assert slug is not None
    return await lookup.model_spec(session, slug)


async def _formats(
    session: AsyncSession, weight_slug: str, kv_slug: str | None
) -> tuple[NumberFormat, NumberFormat]:
    weights = await lookup.number_format(session, weight_slug, "weight_format")
    if kv_slug is None:
        return weights, default_kv_format(weights)
    kv = await lookup.number_format(session, kv_slug, "kv_format")
    require(kv.kv_capable, "kv_format", f"{kv.slug} cannot hold a KV cache")
    return weights, kv


async def _gpus(session: AsyncSession, slug: str | None) -> list[GpuSpec]:
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
    answers.sort(key=lambda a: (not a.fits, a.gpu_count, -a.spare_fraction))
    if len(gpus) == 1:
        return answers[0]
    return msgspec.structs.replace(answers[0], options=answers)


@post(
    "/plan",
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="Where does this model fit, on how many GPUs, with how much room left",
    operation_class=_also_served_as(MARKDOWN),
    status_code=200,
)
async def plan_endpoint(
    request: Request[Any, Any, Any], db_session: Session, data: JSONBody[PlanRequest]
) -> Response[PlanAnswer | TrainingAnswer]:
    model = await _model(db_session, data.model, data.model_spec)
    gpus = await _gpus(db_session, data.gpu)
    weights, kv = await _formats(db_session, data.weight_format, data.kv_format)
    inference_splits = data.splits or [1, 2, 4, 8]
    workload = Workload(
        concurrency=data.concurrency,
        context_tokens=data.context_tokens,
        gpu_memory_utilization=data.gpu_memory_utilization,
        overhead_bytes_per_gpu=data.overhead_bytes_per_gpu,
        capacity_basis=data.capacity_basis,
        splits=tuple(inference_splits),
    )
    if data.workload != "inference":
        return Response(_train(data, model, gpus, workload))
    if data.gpu is not None:
        best = plan(model, gpus[0], weights, kv, workload)
        options = []
    else:
        options = rank_gpus(model, gpus, weights, kv, workload)
        require(bool(options), "splits", "no GPU in the catalogue can split this model that way")
        best = options[0]
    if _wants(request, MARKDOWN) == MARKDOWN:
        return Response(plan_markdown(best, options), media_type=MARKDOWN)  # type: ignore[arg-type]
    return Response(PlanAnswer(**msgspec.structs.asdict(best), options=options))


async def _matrix(
    request: Request[Any, Any, Any], session: AsyncSession, data: MatrixRequest
) -> Response[Any]:
    if data.models:
        models = [await lookup.model_spec(session, s, field="models") for s in data.models]
    else:
        models = await lookup.all_model_specs(session)
    if data.gpus:
        gpus = [await lookup.gpu_spec(session, s, field="gpus") for s in data.gpus]
    else:
        gpus = await lookup.all_gpu_specs(session)
    formats = [
        await lookup.number_format(session, s, "formats")
        for s in (data.formats or DEFAULT_MATRIX_FORMATS)
    ]
    kv = None
    if data.kv_format is not None:
        kv = await lookup.number_format(session, data.kv_format, "kv_format")
        require(kv.kv_capable, "kv_format", f"{kv.slug} cannot hold a KV cache")
    workload = Workload(
        concurrency=data.concurrency,
        context_tokens=data.context_tokens,
        gpu_memory_utilization=data.gpu_memory_utilization,
        overhead_bytes_per_gpu=data.overhead_bytes_per_gpu,
        capacity_basis=data.capacity_basis,
        splits=tuple(data.splits),
    )
    m = build_matrix(models, formats, gpus, workload, kv)
    wanted = _wants(request, MARKDOWN, CSV)
    if wanted == MARKDOWN:
        return Response(matrix_markdown(m), media_type=MARKDOWN)
    if wanted == CSV:
        return Response(
            matrix_csv(m),
            media_type=CSV,
            headers={"Content-Disposition": 'attachment; filename="matrix.csv"'},
        )
    return Response(m)


QuerySlugs = Annotated[
    list[str] | None, QueryParameter(max_items=64, description="Repeat to name several")
]


@get(
    "/matrix",
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="Fewest GPUs for each model and format on each GPU (the seeds' matrix)",
    operation_class=_also_served_as(MARKDOWN, CSV),
)
async def matrix_get(
    request: Request[Any, Any, Any],
    db_session: Session,
    models: QuerySlugs = None,
    formats: QuerySlugs = None,
    gpus: QuerySlugs = None,
    concurrency: Annotated[int, QueryParameter(ge=1, le=1_000_000)] = 8,
    context_tokens: Annotated[int, QueryParameter(ge=1, le=100_000_000)] = 8192,
    gpu_memory_utilization: Annotated[float, QueryParameter(gt=0, le=1)] = 0.9,
    overhead_bytes_per_gpu: Annotated[int, QueryParameter(ge=0, le=10**15)] = 4_000_000_000,
) -> Response[Any]:
    data = MatrixRequest(
        models=models or [],
        formats=formats or [],
        gpus=gpus or [],
        concurrency=concurrency,
        context_tokens=context_tokens,
        gpu_memory_utilization=gpu_memory_utilization,
        overhead_bytes_per_gpu=overhead_bytes_per_gpu,
    )
    return await _matrix(request, db_session, data)


@post(
    "/matrix",
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="The matrix for chosen models, formats, GPUs and workload",
    operation_class=_also_served_as(MARKDOWN, CSV),
    status_code=200,
)
async def matrix_post(
    request: Request[Any, Any, Any], db_session: Session, data: JSONBody[MatrixRequest]
) -> Response[Any]:
    return await _matrix(request, db_session, data)


@post(
    "/offload",
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="How fast a model runs with part of its weights in CPU memory",
    operation_class=_also_served_as(MARKDOWN),
    status_code=200,
)
async def offload_endpoint(
    request: Request[Any, Any, Any], db_session: Session, data: JSONBody[OffloadRequest]
) -> Response[Offload]:
    model = await lookup.model_spec(db_session, data.model)
    gpu = await lookup.gpu_spec(db_session, data.gpu)
    weights, kv = await _formats(db_session, data.weight_format, data.kv_format)
    if data.link is not None:
        link = await lookup.link_spec(db_session, data.link)
    elif gpu.host_link is not None:
        link = gpu.host_link
    else:
        raise SizingError("link", f"{gpu.slug} has no host link in the catalogue: name one")
    workload = Workload(
        context_tokens=data.context_tokens,
        gpu_memory_utilization=data.gpu_memory_utilization,
        overhead_bytes_per_gpu=data.overhead_bytes_per_gpu,
        capacity_basis=data.capacity_basis,
    )
    answer = offload(
        model,
        gpu,
        weights,
        kv,
        link,
        workload,
        gpu_count=data.gpu_count,
        batch_size=data.batch_size,
        resident_bytes=data.resident_bytes,
    )
    if _wants(request, MARKDOWN) == MARKDOWN:
        return Response(offload_markdown(answer), media_type=MARKDOWN)  # type: ignore[arg-type]
    return Response(answer)


compute_handlers = [plan_endpoint, matrix_get, matrix_post, offload_endpoint]
