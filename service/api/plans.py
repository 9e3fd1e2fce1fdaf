"""/plans: saved plans and their review. Controllers parse, call service.plans.actions, render.

Who: reading needs any valid key (viewer and up); creating, editing and submitting need
planner (and, to edit or submit, being the author); reviewing needs reviewer (never the author).
Writes to an existing plan need If-Match with the ETag read from it: 428 without, 412 when the
plan changed since. POST /plans honours Idempotency-Key: a retry by the same caller with the same
key and body answers 200 with the plan the first request created (201); the same key with a
different body is 422.
"""

import datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from litestar import Controller, Request, Response, get, patch, post
from litestar.datastructures import ResponseHeader
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter, JSONBody, PathParameter, QueryParameter
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.compute import csv_attachment
from service.api.guards import require_role
from service.api.negotiation import (
    CSV,
    JSON,
    MARKDOWN,
    SERVED_AS,
    SVG,
    also_served_as,
    wants,
)
from service.api.plans_render import plans_csv, saved_plan_markdown
from service.api.plans_schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    CreatePlanBody,
    EditPlanBody,
    ReviewBody,
)
from service.api.problems import PROBLEM_JSON, ClientProblem, problems
from service.observability import note_outcome
from service.plans import actions
from service.plans.records import PlanHistory, PlanPage, Recheck, SavedPlan
from service.plans.store import Filters
from service.plans.tables import IDEMPOTENCY_KEY_LENGTH, PRINCIPAL_LENGTH
from service.plans.workflow import (
    Status,
    etag,
)
from service.render.svg import plan_svg
from service.schemas.plan import PlanAnswer
from service.schemas.problem import Problem
from service.sizing.errors import SizingError

Session = NamedDependency[AsyncSession]
AnyRequest = Request[Any, Any, Any]

PlanId = Annotated[int, PathParameter(ge=1, le=2**53 - 1, description="The plan's id")]
IfMatch = Annotated[
    str | None,
    HeaderParameter(
        name="If-Match",
        max_length=1000,
        description='The ETag of the version you read, e.g. "3" (428 without it, 412 if stale)',
    ),
]
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        min_length=1,
        max_length=IDEMPOTENCY_KEY_LENGTH,
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Makes a retried POST safe: same caller, key and body -> the first plan (200)",
    ),
]
QueryName = Annotated[
    str | None, QueryParameter(max_length=PRINCIPAL_LENGTH, pattern=r"^[^\x00]*$")
]
QuerySlug = Annotated[
    str | None, QueryParameter(max_length=100, pattern=r"^[^\x00]*$", description="Slug or alias")
]
QueryMoment = Annotated[
    datetime.datetime | None,
    QueryParameter(description="ISO 8601; without an offset it means UTC"),
]

_PLAN_PROBLEMS = {
    403: "The key's role is too low, or the plan is not yours to edit or submit, or it is yours "
    "and you try to review it.",
    404: "No plan with this id (or, in the plan request, an unknown slug: suggestions).",
    409: "Not possible in the plan's current state (named in the problem).",
    412: "If-Match names a version that is no longer current: GET the plan again.",
    422: "The input parses but is not consistent (or an Idempotency-Key reused with another "
    "body); errors name the fields.",
    428: "If-Match is required on writes to a plan.",
}


def plan_problems(*statuses: int) -> dict[int, ResponseSpec]:
    """problems(), with the plan-specific meaning of some statuses and 412/428 added."""
    specs = problems(*(s for s in statuses if s not in (412, 428)))
    for status in statuses:
        if status in _PLAN_PROBLEMS:
            specs[status] = ResponseSpec(
                data_container=Problem,
                media_type=PROBLEM_JSON,
                description=_PLAN_PROBLEMS[status],
                generate_examples=False,
            )
    return dict(sorted(specs.items()))


def _etag_header(description: str) -> list[ResponseHeader]:
    return [
        ResponseHeader(name="ETag", description=description, documentation_only=True),
        ResponseHeader(
            name="Link",
            description='The plan\'s page for people: </plans/{id}/view>; rel="alternate"',
            documentation_only=True,
        ),
    ]


def view_link(plan_id: int) -> str:
    """The page a review request or a chat message links to (service/web)."""
    return f'</plans/{plan_id}/view>; rel="alternate"; type="text/html"'


def _principal(request: AnyRequest) -> str:
    return str(request.state.principal.name)


def _plan(plan: SavedPlan, status_code: int = 200, **headers: str) -> Response[SavedPlan]:
    headers = {"ETag": etag(plan.version), "Link": view_link(plan.id), **headers}
    return Response(plan, status_code=status_code, headers=headers)


# Problems --------------------------------------------------------------------------------


def _picture(plan: SavedPlan) -> Response[Any]:
    """The stored answer's SVG; a 406 naming what a training plan is served as instead."""
    if not isinstance(plan.answer, PlanAnswer):
        raise ClientProblem(
            406,
            "Accept",
            "a training plan has no memory picture; it is served as application/json "
            "(GET /plans/{plan_id}) and text/markdown",
            type_="urn:gpu-planner:not-acceptable",
            suggestions=[JSON, MARKDOWN],
        )
    return Response(
        plan_svg(plan.answer),
        media_type=SVG,
        headers={"ETag": etag(plan.version)},
    )


def _utc(field: str, moment: datetime.datetime | None) -> datetime.datetime | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.UTC)
    try:
        return moment.astimezone(datetime.UTC)
    except OverflowError:  # year 1 with a positive offset, year 9999 with a negative one
        raise SizingError(field, "is out of range") from None


# Handlers --------------------------------------------------------------------------------


class PlansController(Controller):
    path = "/plans"
    tags = ["plans"]  # noqa: RUF012
    security = [{"bearer": []}]  # noqa: RUF012

    @post(
        "/",
        guards=[require_role("planner")],
        summary="Save a plan: compute it and keep the request, answer and catalogue rows used",
        responses={
            200: ResponseSpec(
                data_container=SavedPlan,
                description="A retry with the same Idempotency-Key and body: the first plan.",
                generate_examples=False,
            ),
            **plan_problems(400, 401, 403, 404, 413, 422),
        },
        response_headers=_etag_header("The new plan's version"),
        status_code=201,
    )
    async def create_plan(
        self,
        request: AnyRequest,
        db_session: Session,
        data: JSONBody[CreatePlanBody],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[SavedPlan]:
        plan, created = await actions.create(
            db_session, _principal(request), data.name, data.notes, data.request, idempotency_key
        )
        if created:
            note_outcome(request.scope["state"], "created", plan.answer.status)  # type: ignore[typeddict-item]
        return _plan(plan, 201 if created else 200, Location=f"/plans/{plan.id}")

    @get(
        "/",
        guards=[require_role("viewer")],
        summary="List saved plans, newest first, with filters and a cursor",
        responses=plan_problems(400, 401, 403, 422),
        operation_class=also_served_as(CSV),
    )
    async def list_plans(
        self,
        request: AnyRequest,
        db_session: Session,
        status: Annotated[Status | None, QueryParameter(description="Review state")] = None,
        author: QueryName = None,
        model: QuerySlug = None,
        gpu: QuerySlug = None,
        created_after: QueryMoment = None,
        created_before: QueryMoment = None,
        limit: Annotated[int, QueryParameter(ge=1, le=200, description="Plans per page")] = 50,
        cursor: Annotated[
            str | None,
            QueryParameter(
                max_length=200, pattern=r"^[A-Za-z0-9_-]*$", description="next_cursor of a page"
            ),
        ] = None,
    ) -> Response[PlanPage]:
        filters = Filters(
            status=status,
            author=author,
            model=model,
            gpu=gpu,
            created_after=_utc("created_after", created_after),
            created_before=_utc("created_before", created_before),
        )
        page = await actions.list_page(db_session, filters, limit, cursor or None)
        if wants(request, CSV) == CSV:
            link = {}
            if page.next_cursor:
                # The same query (filters, limit) with the next cursor.
                query = [(k, v) for k, v in request.query_params.multi_items() if k != "cursor"]
                query.append(("cursor", page.next_cursor))
                link["Link"] = f'</plans?{urlencode(query)}>; rel="next"'
            return csv_attachment(plans_csv(page.items), "plans.csv", link)  # type: ignore[arg-type]
        return Response(page)

    @get(
        "/{plan_id:int}",
        guards=[require_role("viewer")],
        summary="One saved plan (markdown on Accept: text/markdown: a review-ready summary)",
        description=(
            "Accept: image/svg+xml answers the stored answer's memory picture, as "
            "GET /plans/{plan_id}/picture.svg does (an inference plan's; a training plan: 406)."
        ),
        responses=plan_problems(400, 401, 403, 404),
        response_headers=_etag_header("The plan's version: send it back in If-Match"),
        operation_class=also_served_as(MARKDOWN, SVG),
    )
    async def get_plan(
        self, request: AnyRequest, db_session: Session, plan_id: PlanId
    ) -> Response[SavedPlan]:
        plan = await actions.get(db_session, plan_id)
        wanted = wants(request, MARKDOWN, SVG)
        if wanted == SVG:
            return _picture(plan)
        if wanted == MARKDOWN:
            events = await actions.events(db_session, plan_id)
            return Response(
                saved_plan_markdown(plan, events),  # type: ignore[arg-type]
                media_type=MARKDOWN,
                headers={"ETag": etag(plan.version)},
            )
        return _plan(plan)

    @get(
        "/{plan_id:int}/picture.svg",
        guards=[require_role("viewer")],
        summary="A saved plan's memory picture (SVG): its stored answer, one bar per GPU",
        description=(
            "The stored answer as POST /plan draws it with Accept: image/svg+xml: bands "
            "labelled in GB and GiB, the utilisation and OOM lines, the status in colour. "
            "A training plan has no picture: 406."
        ),
        responses=plan_problems(400, 401, 403, 404),
        response_headers=_etag_header("The plan's version the picture shows"),
        media_type=SVG,
        opt={SERVED_AS: (SVG,)},
    )
    async def plan_picture(
        self, request: AnyRequest, db_session: Session, plan_id: PlanId
    ) -> Response[str]:
        return _picture(await actions.get(db_session, plan_id))

    @get(
        "/{plan_id:int}/history",
        guards=[require_role("viewer")],
        summary="Every event of a plan, oldest first: created, edited, submitted, reviewed",
        responses=plan_problems(400, 401, 403, 404),
    )
    async def plan_history(self, db_session: Session, plan_id: PlanId) -> PlanHistory:
        return await actions.history(db_session, plan_id)

    @patch(
        "/{plan_id:int}",
        guards=[require_role("planner")],
        summary="Edit a draft (or a plan with changes requested: back to draft); recomputes",
        responses=plan_problems(400, 401, 403, 404, 409, 412, 413, 422, 428),
        response_headers=_etag_header("The plan's new version"),
    )
    async def edit_plan(
        self,
        request: AnyRequest,
        db_session: Session,
        plan_id: PlanId,
        data: JSONBody[EditPlanBody],
        if_match: IfMatch = None,
    ) -> Response[SavedPlan]:
        plan = await actions.edit(
            db_session,
            plan_id,
            _principal(request),
            if_match,
            name=data.name,
            notes=data.notes,
            request=data.request,
        )
        return _plan(plan)

    @post(
        "/{plan_id:int}/submit",
        guards=[require_role("planner")],
        summary="Submit a draft for review (the author only)",
        responses=plan_problems(400, 401, 403, 404, 409, 412, 428),
        response_headers=_etag_header("The plan's new version"),
        status_code=200,
    )
    async def submit_plan(
        self, request: AnyRequest, db_session: Session, plan_id: PlanId, if_match: IfMatch = None
    ) -> Response[SavedPlan]:
        return _plan(await actions.submit(db_session, plan_id, _principal(request), if_match))

    @post(
        "/{plan_id:int}/reviews",
        guards=[require_role("reviewer")],
        summary="Approve, reject or request changes on a submitted plan (never your own)",
        responses=plan_problems(400, 401, 403, 404, 409, 412, 413, 422, 428),
        response_headers=_etag_header("The plan's new version"),
        status_code=200,
    )
    async def review_plan(
        self,
        request: AnyRequest,
        db_session: Session,
        plan_id: PlanId,
        data: JSONBody[ReviewBody],
        if_match: IfMatch = None,
    ) -> Response[SavedPlan]:
        plan = await actions.review(
            db_session, plan_id, _principal(request), if_match, data.decision, data.comment
        )
        note_outcome(request.scope["state"], "reviewed", plan.status)  # type: ignore[typeddict-item]
        return _plan(plan)

    @get(
        "/{plan_id:int}/recheck",
        guards=[require_role("viewer")],
        summary="Recompute against today's catalogue and say what changed; saves nothing",
        responses=plan_problems(400, 401, 403, 404),
    )
    async def recheck_plan(self, db_session: Session, plan_id: PlanId) -> Recheck:
        return await actions.recheck(db_session, plan_id)


plan_handlers = [PlansController]
