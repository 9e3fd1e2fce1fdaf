"""GET /plan.svg: a plan's memory picture from a URL alone, for chat messages and documents.

The query names PlanRequest's simple fields (an inference plan of a catalogue model; repeat
``splits`` to name several GPU counts); the answer is POST /plan's with Accept: image/svg+xml,
byte for byte. Chat answers to a ``plan`` command link here (service.chatops.run).
"""

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, get
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.params import QueryParameter

from service.api.cached_catalogue import CACHED_CATALOGUE
from service.api.compute import COMPUTE_ERRORS, OPEN, Session, plan_response
from service.api.negotiation import SERVED_AS, SVG
from service.api.problems import ClientProblem
from service.plans.evaluate import evaluate_plan
from service.schemas.bounds import SEED_OVERHEAD_BYTES
from service.schemas.plan import PlanRequest
from service.sizing.cost import RankBy
from service.sizing.hardware import DEFAULT_CAPACITY_BASIS, CapacityBasis
from service.sizing.workload import MAX_GPU_COUNT, MAX_SPLITS

SLUG = {"min_length": 1, "max_length": 100, "pattern": r"^[^\x00]+$"}
"""PlanRequest's SlugRef bounds, stated on each name."""
Name = Annotated[str | None, QueryParameter(**SLUG)]  # type: ignore[arg-type]
SPLIT_ITEMS = Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=MAX_GPU_COUNT)


def _request(query: dict[str, Any]) -> PlanRequest:
    """The query as a PlanRequest, checked by the same decoder as POST /plan's body."""
    try:
        return msgspec.convert({k: v for k, v in query.items() if v is not None}, PlanRequest)
    except msgspec.ValidationError as exc:  # e.g. a split of 0: name the parameter
        message = str(exc)
        field = message.rsplit("`$.", 1)[-1].split("`")[0].split("[")[0] if "`$." in message else ""
        raise ClientProblem(400, field or "query", message) from None


@get(
    "/plan.svg",
    middleware=CACHED_CATALOGUE,
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="A plan's memory picture (SVG) from its query: what chat answers link to",
    description=(
        "The inference plan the query names, drawn as POST /plan draws it with Accept: "
        "image/svg+xml (the same numbers): one stacked bar per GPU, bands labelled in GB and "
        "GiB, the utilisation and OOM lines, the status in colour. Without gpu: the best option. "
        f"Repeat splits (1 to {MAX_SPLITS} counts of 1 to {MAX_GPU_COUNT:,} GPUs)."
    ),
    media_type=SVG,
    opt={SERVED_AS: (SVG,)},
)
async def plan_svg_endpoint(
    request: Request[Any, Any, Any],
    db_session: Session,
    model: Annotated[str, QueryParameter(**SLUG)],  # type: ignore[arg-type]
    gpu: Name = None,
    weight_format: Name = None,
    kv_format: Name = None,
    concurrency: Annotated[int, QueryParameter(ge=1, le=1_000_000)] = 8,
    context_tokens: Annotated[int, QueryParameter(ge=1, le=100_000_000)] = 8192,
    gpu_memory_utilization: Annotated[float | None, QueryParameter(ge=0.01, le=1)] = None,
    overhead_bytes_per_gpu: Annotated[int, QueryParameter(ge=0, le=10**15)] = SEED_OVERHEAD_BYTES,
    splits: Annotated[
        list[int] | None,
        QueryParameter(min_items=1, max_items=MAX_SPLITS, schema_extra={"items": SPLIT_ITEMS}),
    ] = None,
    rank_by: Annotated[RankBy, QueryParameter()] = "gpus",
    capacity_basis: Annotated[CapacityBasis, QueryParameter()] = DEFAULT_CAPACITY_BASIS,
    method: Annotated[Literal["seed", "vllm"], QueryParameter()] = "seed",
) -> Response[str]:
    data = _request(
        {
            "model": model,
            "gpu": gpu,
            "weight_format": weight_format,
            "kv_format": kv_format,
            "concurrency": concurrency,
            "context_tokens": context_tokens,
            "gpu_memory_utilization": gpu_memory_utilization,
            "overhead_bytes_per_gpu": overhead_bytes_per_gpu,
            "splits": splits,
            "rank_by": rank_by,
            "capacity_basis": capacity_basis,
            "method": method,
        }
    )
    answer = await evaluate_plan(db_session, data)
    return plan_response(request, answer, only=SVG)


picture_handlers = [plan_svg_endpoint]
