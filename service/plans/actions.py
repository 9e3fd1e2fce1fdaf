"""The saved-plan operations, one per endpoint: each runs inside the request's transaction
(committed on a 2xx answer, rolled back otherwise), so a failure half-way leaves nothing."""

import hashlib

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.catalogue.errors import NotFound
from service.catalogue.lookup import normalise, resolve
from service.catalogue.tables import Gpu, Model
from service.plans import snapshot, store, workflow
from service.plans.records import (
    Change,
    Outcome,
    PlanEvent,
    PlanHistory,
    PlanPage,
    Recheck,
    SavedPlan,
)
from service.plans.tables import IdempotencyKeyRow, PlanRow, utc_now
from service.plans.threads import off_loop
from service.plans.workflow import Decision, EventKind, Status
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer
from service.sizing.errors import SizingError, require

Answer = PlanAnswer | TrainingAnswer


class IdempotencyMismatch(Exception):
    """The Idempotency-Key was first used with another body (422)."""

    def __init__(self, plan_id: int | None) -> None:
        message = (
            "this Idempotency-Key was already used with a different body"
            + (f" (it created plan {plan_id})" if plan_id is not None else "")
            + "; use a new key for a new plan"
        )
        super().__init__(message)
        self.message = message


def body_digest(name: str, notes: str, request: PlanRequest) -> str:
    """sha256 of the decoded body (defaults filled in, keys sorted): equal bodies, equal digests."""
    canonical = msgspec.json.encode(
        {"name": name, "notes": notes, "request": msgspec.to_builtins(request)}, order="sorted"
    )
    return hashlib.sha256(canonical).hexdigest()


async def _compute(session: AsyncSession, request: PlanRequest) -> dict[str, object]:
    """The columns a request determines: its answer, the rows it used, and the filter slugs.

    Problems name fields as the body spells them: ``request.model``, not ``model``.
    """
    try:
        catalogue = await snapshot.take(session, request)
        answer = await off_loop(snapshot.answer_from, request, catalogue)
    except SizingError as exc:
        raise SizingError(f"request.{exc.field}", exc.message) from None
    except NotFound as exc:
        raise NotFound(
            field=f"request.{exc.field}",
            slug=exc.slug,
            kind=exc.kind,
            suggestions=exc.suggestions,
            ambiguous=exc.ambiguous,
            status=exc.status,
        ) from None
    return {
        "workload": request.workload,
        "model_slug": answer.model,
        "gpu_slug": answer.gpu,
        "request": msgspec.to_builtins(request),
        "answer": msgspec.to_builtins(answer),
        "catalogue": catalogue,
    }


async def _replay(session: AsyncSession, held: IdempotencyKeyRow, digest: str) -> SavedPlan:
    """The plan a committed request with this key created, if the body is the same."""
    if held.request_sha256 != digest or held.plan_id is None:
        raise IdempotencyMismatch(held.plan_id)
    return store.saved_plan(await store.get(session, held.plan_id))


async def create(
    session: AsyncSession,
    author: str,
    name: str,
    notes: str,
    request: PlanRequest,
    idempotency_key: str | None = None,
) -> tuple[SavedPlan, bool]:
    """A new draft, or (same author, same Idempotency-Key) the plan the first request made.

    The second value says whether this call created the plan.
    """
    digest = body_digest(name, notes, request)
    if idempotency_key is not None:
        held = await store.find_key(session, author, idempotency_key)
        if held is not None:
            return await _replay(session, held, digest), False
    columns = await _compute(session, request)
    key_id = None
    if idempotency_key is not None:
        key_id = await store.claim_key(session, author, idempotency_key, digest)
        if key_id is None:  # a concurrent retry won the key and has committed its plan
            held = await store.find_key(session, author, idempotency_key)
            assert held is not None  # claimed by a request that has committed
            return await _replay(session, held, digest), False
    row = PlanRow(name=name, notes=notes, status="draft", author=author, version=1, **columns)
    session.add(row)
    await session.flush()
    await store.add_event(
        session, row.id, "created", author, from_status=None, to_status="draft", version=1
    )
    if key_id is not None:
        await store.attach_key(session, key_id, row.id)
    return store.saved_plan(row), True


async def get(session: AsyncSession, plan_id: int) -> SavedPlan:
    return store.saved_plan(await store.get(session, plan_id))


async def events(session: AsyncSession, plan_id: int) -> list[PlanEvent]:
    """A plan's events, oldest first (none for an unknown id: check the plan first)."""
    return [store.event_of(event) for event in await store.events(session, plan_id)]


async def history(session: AsyncSession, plan_id: int) -> PlanHistory:
    row = await store.get(session, plan_id)
    return PlanHistory(
        plan_id=row.id,
        status=row.status,  # type: ignore[arg-type]  # the column holds Status values only
        version=row.version,
        events=await events(session, plan_id),
    )


async def _catalogue_slug(session: AsyncSession, kind: str, name: str) -> str:
    """A filter's name as the slug plans store: aliases resolve (h100 -> h100-sxm); a name the
    catalogue no longer knows (deleted row, inline model_spec) is matched as typed."""
    try:
        if kind == "gpu":
            return (await resolve(session, Gpu, name, kind)).slug
        return (await resolve(session, Model, name, kind)).slug
    except NotFound:
        return normalise(name)


async def list_page(
    session: AsyncSession, filters: store.Filters, limit: int, cursor: str | None
) -> PlanPage:
    changes = {}
    if filters.model is not None:
        changes["model"] = await _catalogue_slug(session, "model", filters.model)
    if filters.gpu is not None:
        changes["gpu"] = await _catalogue_slug(session, "gpu", filters.gpu)
    rows, next_cursor = await store.page(
        session, msgspec.structs.replace(filters, **changes), limit, cursor
    )
    return PlanPage(items=[store.summary(row) for row in rows], next_cursor=next_cursor)


async def _transition(
    session: AsyncSession,
    row: PlanRow,
    expected: int,
    kind: EventKind,
    actor: str,
    status: Status,
    changes: dict[str, object] | None = None,
    *,
    decision: Decision | None = None,
    comment: str = "",
) -> SavedPlan:
    """Move the plan to ``status`` (with ``changes``) if it is still at ``expected``, and log it."""
    before = row.status
    row = await store.update_versioned(session, row, expected, status=status, **(changes or {}))
    await store.add_event(
        session,
        row.id,
        kind,
        actor,
        from_status=before,
        to_status=status,
        version=row.version,
        decision=decision,
        comment=comment,
    )
    return store.saved_plan(row)


async def edit(
    session: AsyncSession,
    plan_id: int,
    actor: str,
    if_match: str | None,
    *,
    name: str | None,
    notes: str | None,
    request: PlanRequest | None,
) -> SavedPlan:
    """Change a draft (or a plan with changes requested, which becomes a draft again) and
    recompute its answer against today's catalogue."""
    row = await store.get(session, plan_id)
    expected = workflow.check_version(if_match, row.version)
    workflow.check_author("edit", row.author, actor)
    status = workflow.after_edit(row.status)
    new_request = request or msgspec.convert(row.request, PlanRequest)
    changes = await _compute(session, new_request)
    if name is not None:
        changes["name"] = name
    if notes is not None:
        changes["notes"] = notes
    return await _transition(session, row, expected, "edited", actor, status, changes)


async def submit(
    session: AsyncSession, plan_id: int, actor: str, if_match: str | None
) -> SavedPlan:
    row = await store.get(session, plan_id)
    expected = workflow.check_version(if_match, row.version)
    workflow.check_author("submit", row.author, actor)
    status = workflow.after_submit(row.status)
    return await _transition(session, row, expected, "submitted", actor, status)


async def review(
    session: AsyncSession,
    plan_id: int,
    reviewer: str,
    if_match: str | None,
    decision: Decision,
    comment: str,
) -> SavedPlan:
    row = await store.get(session, plan_id)
    expected = workflow.check_version(if_match, row.version)
    workflow.check_reviewer(row.author, reviewer)
    status = workflow.after_review(row.status, decision)
    require(
        decision not in workflow.NEEDS_COMMENT or bool(comment.strip()),
        "comment",
        f"say why: {decision} needs a comment the author can act on",
    )
    return await _transition(
        session, row, expected, "reviewed", reviewer, status, decision=decision, comment=comment
    )


def _outcome(answer: Answer) -> Outcome:
    """The answer's fields that Outcome names (both answer kinds have them all)."""
    return msgspec.convert(answer, Outcome, from_attributes=True)


async def recheck(session: AsyncSession, plan_id: int) -> Recheck:
    """Recompute the stored request against today's catalogue; change nothing."""
    row = await store.get(session, plan_id)
    before = _outcome(store.answer_of(row))
    request = msgspec.convert(row.request, PlanRequest)
    try:
        today = await snapshot.take(session, request)
        after = _outcome(await off_loop(snapshot.answer_from, request, today))
    except (NotFound, SizingError) as exc:
        # A row it used was deleted or changed beyond use: that is the finding, not an error.
        return Recheck(
            plan_id=row.id,
            version=row.version,
            changed=True,
            before=before,
            after=None,
            changes=[],
            catalogue_changes=[],
            problem=str(exc),
            checked_at=utc_now(),
        )
    changes = [
        Change(field=field, before=getattr(before, field), after=getattr(after, field))
        for field in Outcome.__struct_fields__
        if getattr(before, field) != getattr(after, field)
    ]
    return Recheck(
        plan_id=row.id,
        version=row.version,
        changed=bool(changes),
        before=before,
        after=after,
        changes=changes,
        catalogue_changes=snapshot.differences(row.catalogue, today),
        checked_at=utc_now(),
    )
