"""POST /speed: one deployment over a sweep of concurrencies or request rates, one row per
point (JSON; markdown on Accept: text/markdown; CSV on Accept: text/csv)."""

from typing import Any

from litestar import Request, Response, post
from litestar.params import JSONBody

from service.api.cached_catalogue import CACHED_CATALOGUE
from service.api.compute import COMPUTE_ERRORS, OPEN, Session, csv_attachment
from service.api.negotiation import CSV, MARKDOWN, also_served_as, wants
from service.plans.speed import evaluate_speed
from service.render.speed import speed_csv, speed_markdown
from service.schemas.speed import MAX_SWEEP_POINTS, SpeedAnswer, SpeedRequest


@post(
    "/speed",
    middleware=CACHED_CATALOGUE,
    guards=OPEN,
    responses=COMPUTE_ERRORS,
    summary="How fast one deployment serves a sweep of concurrencies or request rates",
    description=(
        f"At most {MAX_SWEEP_POINTS} points. Concurrencies: a closed loop of N clients (as "
        "`vllm bench serve --max-concurrency N`); request rates: an open loop (past capacity a "
        "row says stable: false, with no TTFT). Per replica unless a field says per GPU. A "
        "deployment the engine does not start on, or a prompt and answer longer than "
        "max_model_len, is a 422 naming the field."
    ),
    operation_class=also_served_as(MARKDOWN, CSV),
    status_code=200,
)
async def speed_endpoint(
    request: Request[Any, Any, Any], db_session: Session, data: JSONBody[SpeedRequest]
) -> Response[SpeedAnswer]:
    wanted = wants(request, MARKDOWN, CSV)
    answer = await evaluate_speed(db_session, data)
    if wanted == MARKDOWN:
        return Response(speed_markdown(answer), media_type=MARKDOWN)  # type: ignore[arg-type]
    if wanted == CSV:
        return csv_attachment(speed_csv(answer), "speed.csv")
    return Response(answer)


speed_handlers = [speed_endpoint]
