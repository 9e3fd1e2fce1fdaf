"""The computations: POST /plan, GET|POST /matrix, POST /offload.

Each handler parses, looks the names up in the catalogue, calls the sizing core and renders
(JSON by default; markdown on Accept: text/markdown; CSV on /matrix with Accept: text/csv;
see service/api/negotiation.py for what else the Accept header may do).
"""

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, QueryParameter
from litestar.serialization import encode_json
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.cached_catalogue import CACHED_CATALOGUE, SNAPSHOT_ONLY, request_snapshot
from service.api.encoded import EncodedJson
from service.api.guards import open_unless_required
from service.api.negotiation import CSV, JSON, MARKDOWN, SVG, also_served_as, wants
from service.api.problems import problems
from service.catalogue import lookup
from service.catalogue.lookup import serving_snapshot
from service.catalogue.memory import Snapshot
from service.catalogue.prices import gpu_prices
from service.observability import note_outcome
from service.plans.compute import answer_matrix, answer_offload
from service.plans.evaluate import resolve_formats
from service.plans.served import evaluate_cached
from service.plans.threads import off_loop
from service.render.speed import (
    matrix_traffic_csv,
    matrix_traffic_markdown,
    traffic_markdown,
)
from service.render.svg import plan_svg
from service.render.text import (
    matrix_csv,
    matrix_markdown,
    offload_markdown,
    plan_markdown,
    plans_csv,
)
from service.schemas.bounds import (
    MAX_CONTEXT_TOKENS,
    MAX_OVERHEAD_BYTES,
    MAX_USERS,
    SEED_OVERHEAD_BYTES,
)
from service.schemas.compute import (
    DEFAULT_MATRIX_FORMATS,
    MAX_MATRIX_FORMATS,
    MAX_MATRIX_GPUS,
    MAX_MATRIX_MODELS,
    MatrixRequest,
    OffloadRequest,
    TrafficMatrix,
)
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.cost import CostedMatrix
from service.sizing.matrix import MAX_MATRIX_CELLS
from service.sizing.offload import Offload
from service.sizing.vllm.plan import VllmPlanAnswer

Session = NamedDependency[AsyncSession]
OPEN = [open_unless_required("viewer")]
COMPUTE_ERRORS = problems(400, 401, 403, 404, 413, 422)


def csv_attachment(text: str, filename: str, extra: dict[str, str] | None = None) -> Response[Any]:
    """A CSV answer offered as a file download (``extra``: more headers, e.g. Link)."""
    headers = {"Content-Disposition": f'attachment; filename="{filename}"', **(extra or {})}
    return Response(text, media_type=CSV, headers=headers)


@post(
    "/plan",
    opt=SNAPSHOT_ONLY,
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="Where does this model fit, on how many GPUs, with how much room left",
    description=(
        "Accept: image/svg+xml answers the memory picture of the (best) plan: one stacked bar "
        "per GPU, bands labelled in GB and GiB, against the utilisation and OOM lines (vllm "
        "method too; training plans are JSON or markdown only: 406)."
    ),
    operation_class=also_served_as(MARKDOWN, CSV, SVG),
    status_code=200,
)
async def plan_endpoint(
    request: Request[Any, Any, Any], data: JSONBody[PlanRequest]
) -> Response[PlanAnswer | TrainingAnswer | VllmPlanAnswer]:
    # Its names resolve in the serving snapshot: no session.
    answer = await evaluate_cached(await request_snapshot(request), data)
    note_outcome(request.scope["state"], "compute", getattr(answer, "status", ""))  # type: ignore[typeddict-item]
    return plan_response(request, answer)


def plan_response(
    request: Request[Any, Any, Any],
    answer: PlanAnswer | TrainingAnswer | VllmPlanAnswer,
    only: str | None = None,
) -> Response[Any]:
    """A /plan answer in the rendering the Accept header picks, or in ``only`` (GET /plan.svg,
    whose negotiation already refused an Accept without it)."""
    if only == SVG and not isinstance(answer, TrainingAnswer):
        return Response(plan_svg(answer), media_type=SVG)
    if isinstance(answer, PlanAnswer):
        wanted = wants(request, MARKDOWN, CSV, SVG)
        if wanted == SVG:
            return Response(plan_svg(answer), media_type=SVG)
        if wanted == MARKDOWN:
            text = plan_markdown(answer, answer.options)  # type: ignore[arg-type]
            if answer.traffic is not None:
                text += "\n" + traffic_markdown(answer.traffic)
            return Response(text, media_type=MARKDOWN)
        if wanted == CSV:  # the ranked options (or the one plan), one row per GPU
            return csv_attachment(plans_csv(answer.options or [answer]), "plans.csv")  # type: ignore[arg-type]
    elif isinstance(answer, VllmPlanAnswer):
        if wants(request, SVG) == SVG:
            return Response(plan_svg(answer), media_type=SVG)
    else:
        wants(request)  # training answers are JSON only: else a 406
    return EncodedJson(_JSON.encode(answer))


_JSON = msgspec.json.Encoder()
"""A plan answer's JSON, encoded here: the bytes Litestar's serializer writes (an answer holds
msgspec's own types only, so no type encoder is ever called), without the serializer it builds
for every response."""


def _rendered(wanted: str, *args: Any) -> "CostedMatrix | str":
    """The matrix, and its text rendering when one is wanted (both CPU-bound: off the loop)."""
    m = answer_matrix(*args)
    if wanted == MARKDOWN:
        extra = matrix_traffic_markdown(m) if isinstance(m, TrafficMatrix) else ""
        return matrix_markdown(m) + extra
    if wanted == CSV:
        return matrix_traffic_csv(m) if isinstance(m, TrafficMatrix) else matrix_csv(m)
    return m


DEFAULT_MATRIX = MatrixRequest()
"""GET /matrix without parameters: the whole catalogue, the default formats and workload."""

_default_matrix: list[tuple[Snapshot, bytes]] = []
"""The default matrix as JSON for the one snapshot it was computed from: the matrix is a pure
function of the request and the catalogue, and a snapshot never changes (a new catalogue is a
new snapshot), so it is computed and encoded once per snapshot."""


async def _matrix(
    request: Request[Any, Any, Any], session: AsyncSession, data: MatrixRequest
) -> Response[Any]:
    if data == DEFAULT_MATRIX and wants(request, MARKDOWN, CSV) == JSON:
        snapshot = await serving_snapshot()
        if snapshot is not None:
            if not _default_matrix or _default_matrix[0][0] is not snapshot:
                answer = (await _computed_matrix(request, session, data)).content
                encoded = encode_json(answer, request.route_handler.default_serializer)
                _default_matrix[:] = [(snapshot, encoded)]
            return EncodedJson(_default_matrix[0][1])
    return await _computed_matrix(request, session, data)


async def _computed_matrix(
    request: Request[Any, Any, Any], session: AsyncSession, data: MatrixRequest
) -> Response[Any]:
    # Each name looked up once: repeats are dropped (first-seen order) before the core sees them.
    if data.models:
        models = [await lookup.model_spec(session, s, "models") for s in dict.fromkeys(data.models)]
    else:
        models = await lookup.all_model_specs(session)
    if data.gpus:
        gpus = [await lookup.gpu_spec(session, s, "gpus") for s in dict.fromkeys(data.gpus)]
    else:
        gpus = await lookup.all_gpu_specs(session)
    formats = [
        await lookup.number_format(session, s, "formats")
        for s in dict.fromkeys(data.formats or DEFAULT_MATRIX_FORMATS)
    ]
    kv = None
    if data.kv_format is not None:
        kv = await lookup.number_format(session, data.kv_format, "kv_format")
    prices = await gpu_prices(session)
    wanted = wants(request, MARKDOWN, CSV)
    m = await off_loop(_rendered, wanted, data, models, formats, gpus, kv, prices)
    if wanted == MARKDOWN:
        return Response(m, media_type=MARKDOWN)
    if wanted == CSV:
        return csv_attachment(m, "matrix.csv")  # type: ignore[arg-type]
    return Response(m)


REPEAT = "Repeat to name several"
QueryModels = Annotated[
    list[str] | None, QueryParameter(max_items=MAX_MATRIX_MODELS, description=REPEAT)
]
QueryFormats = Annotated[
    list[str] | None, QueryParameter(max_items=MAX_MATRIX_FORMATS, description=REPEAT)
]
QueryGpus = Annotated[
    list[str] | None, QueryParameter(max_items=MAX_MATRIX_GPUS, description=REPEAT)
]
MATRIX_LIMITS = (
    f"Repeated names count once. At most {MAX_MATRIX_CELLS:,} cells (models x formats x GPUs, "
    "after repeats are dropped and empty lists become the catalogue): more is a 422 naming the "
    "longest list."
)


@get(
    "/matrix",
    middleware=CACHED_CATALOGUE,
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="Fewest GPUs for each model and format on each GPU (the seeds' matrix)",
    description=MATRIX_LIMITS,
    operation_class=also_served_as(MARKDOWN, CSV),
)
async def matrix_get(
    request: Request[Any, Any, Any],
    db_session: Session,
    models: QueryModels = None,
    formats: QueryFormats = None,
    gpus: QueryGpus = None,
    concurrency: Annotated[int, QueryParameter(ge=1, le=MAX_USERS)] = 8,
    context_tokens: Annotated[int, QueryParameter(ge=1, le=MAX_CONTEXT_TOKENS)] = 8192,
    gpu_memory_utilization: Annotated[float, QueryParameter(gt=0, le=1)] = 0.9,
    overhead_bytes_per_gpu: Annotated[
        int, QueryParameter(ge=0, le=MAX_OVERHEAD_BYTES)
    ] = SEED_OVERHEAD_BYTES,
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
    middleware=CACHED_CATALOGUE,
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="The matrix for chosen models, formats, GPUs and workload",
    description=MATRIX_LIMITS,
    operation_class=also_served_as(MARKDOWN, CSV),
    status_code=200,
)
async def matrix_post(
    request: Request[Any, Any, Any], db_session: Session, data: JSONBody[MatrixRequest]
) -> Response[Any]:
    return await _matrix(request, db_session, data)


@post(
    "/offload",
    middleware=CACHED_CATALOGUE,
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="How fast a model runs with part of its weights in CPU memory",
    operation_class=also_served_as(MARKDOWN),
    status_code=200,
)
async def offload_endpoint(
    request: Request[Any, Any, Any], db_session: Session, data: JSONBody[OffloadRequest]
) -> Response[Offload]:
    model = await lookup.model_spec(db_session, data.model)
    gpu = await lookup.gpu_spec(db_session, data.gpu)
    weights, kv = await resolve_formats(db_session, data.weight_format, data.kv_format)
    link = await lookup.link_spec(db_session, data.link) if data.link is not None else None
    answer = await off_loop(answer_offload, data, model, gpu, weights, kv, link)
    if wants(request, MARKDOWN) == MARKDOWN:
        return Response(offload_markdown(answer), media_type=MARKDOWN)  # type: ignore[arg-type]
    return Response(answer)


compute_handlers = [plan_endpoint, matrix_get, matrix_post, offload_endpoint]
