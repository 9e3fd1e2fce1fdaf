"""Reading and writing plan rows. Every change to a plan goes through ``update_versioned``:
the version check sits in the UPDATE's WHERE clause, so of two writers that read the same
version exactly one changes the row, on SQLite and PostgreSQL alike (PostgreSQL re-checks the
WHERE after the first writer commits; SQLite serialises writers)."""

import base64
import binascii
import datetime
from typing import Annotated, Any

import msgspec
from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from service.plans.records import PlanEvent, PlanSummary, SavedPlan
from service.plans.tables import IdempotencyKeyRow, PlanEventRow, PlanRow, utc_now
from service.plans.workflow import Decision, EventKind, PreconditionFailed, Status
from service.schemas.plan import PlanAnswer, PlanRequest, TrainingAnswer


class PlanNotFound(LookupError):
    def __init__(self, plan_id: int) -> None:
        self.message = f"no plan {plan_id}"
        super().__init__(self.message)


def answer_of(row: PlanRow) -> PlanAnswer | TrainingAnswer:
    if row.workload == "inference":
        return msgspec.convert(row.answer, PlanAnswer)
    return msgspec.convert(row.answer, TrainingAnswer)


def saved_plan(row: PlanRow) -> SavedPlan:
    return SavedPlan(
        id=row.id,
        name=row.name,
        notes=row.notes,
        status=row.status,  # type: ignore[arg-type]  # the column holds Status values only
        author=row.author,
        version=row.version,
        workload=row.workload,
        model=row.model_slug,
        gpu=row.gpu_slug,
        created_at=row.created_at,
        updated_at=row.updated_at,
        request=msgspec.convert(row.request, PlanRequest),
        answer=answer_of(row),
        catalogue=row.catalogue,
    )


def summary(row: PlanRow) -> PlanSummary:
    answer: dict[str, Any] = row.answer
    return PlanSummary(
        id=row.id,
        name=row.name,
        status=row.status,  # type: ignore[arg-type]
        author=row.author,
        version=row.version,
        workload=row.workload,
        model=row.model_slug,
        gpu=row.gpu_slug,
        # Omitted in the request: the checkpoint's, as the answer names it (training: none).
        weight_format=str(
            row.request.get("weight_format") or answer.get("weight_format") or "bf16"
        ),
        fits=answer["fits"],
        fit_status=answer["status"],
        gpu_count=answer["gpu_count"],
        spare_bytes=answer["spare_bytes"],
        spare_fraction=answer["spare_fraction"],
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def event_of(row: PlanEventRow) -> PlanEvent:
    return msgspec.convert(row, PlanEvent, from_attributes=True)


async def get(session: AsyncSession, plan_id: int) -> PlanRow:
    row = await session.scalar(
        select(PlanRow).where(PlanRow.id == plan_id).execution_options(populate_existing=True)
    )
    if row is None:
        raise PlanNotFound(plan_id)
    return row


async def events(session: AsyncSession, plan_id: int) -> list[PlanEventRow]:
    rows = await session.scalars(
        select(PlanEventRow)
        .where(PlanEventRow.plan_id == plan_id)
        .order_by(PlanEventRow.version, PlanEventRow.id)
    )
    return list(rows.all())


async def add_event(
    session: AsyncSession,
    plan_id: int,
    kind: EventKind,
    actor: str,
    *,
    from_status: str | None,
    to_status: str,
    version: int,
    decision: Decision | None = None,
    comment: str = "",
) -> None:
    session.add(
        PlanEventRow(
            plan_id=plan_id,
            kind=kind,
            actor=actor,
            from_status=from_status,
            to_status=to_status,
            version=version,
            decision=decision,
            comment=comment,
            at=utc_now(),
        )
    )
    await session.flush()


async def update_versioned(
    session: AsyncSession, row: PlanRow, expected_version: int, **values: Any
) -> PlanRow:
    """Apply ``values`` only if the plan is still at ``expected_version``; else 412."""
    result = await session.execute(
        update(PlanRow)
        .where(PlanRow.id == row.id, PlanRow.version == expected_version)
        .values(**values, version=expected_version + 1, updated_at=utc_now())
        .execution_options(synchronize_session=False)
    )
    fresh = await get(session, row.id)
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise PreconditionFailed(fresh.version)
    return fresh


# Idempotency keys -------------------------------------------------------------------------


async def find_key(session: AsyncSession, author: str, key: str) -> IdempotencyKeyRow | None:
    return await session.scalar(
        select(IdempotencyKeyRow)
        .where(IdempotencyKeyRow.author == author, IdempotencyKeyRow.key == key)
        .execution_options(populate_existing=True)
    )


async def claim_key(session: AsyncSession, author: str, key: str, digest: str) -> int | None:
    """Insert the key unless it exists; its id, or None when another request holds it.

    ON CONFLICT DO NOTHING rather than catching a unique violation: a failed INSERT aborts a
    PostgreSQL transaction. A racing insert of the same key waits for the holder to commit
    (PostgreSQL's unique index; SQLite's writer lock) and then does nothing.
    """
    now = utc_now()
    values = {
        "author": author,
        "key": key,
        "request_sha256": digest,
        "plan_id": None,
        "created_at": now,
        "updated_at": now,
    }
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    statement = (
        insert(IdempotencyKeyRow)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["author", "key"])
        .returning(IdempotencyKeyRow.id)
    )
    return (await session.execute(statement)).scalar_one_or_none()


async def attach_key(session: AsyncSession, key_id: int, plan_id: int) -> None:
    await session.execute(
        update(IdempotencyKeyRow)
        .where(IdempotencyKeyRow.id == key_id)
        .values(plan_id=plan_id, updated_at=utc_now())
        .execution_options(synchronize_session=False)
    )


# Listing ----------------------------------------------------------------------------------


class Filters(msgspec.Struct, frozen=True, kw_only=True):
    status: Status | None = None
    author: str | None = None
    model: str | None = None
    gpu: str | None = None
    created_after: datetime.datetime | None = None
    created_before: datetime.datetime | None = None
    """Aware date-times: the API reads a naive one as UTC before it gets here."""


def encode_cursor(row: PlanRow) -> str:
    raw = msgspec.json.encode([row.created_at.isoformat(), row.id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


MAX_ROW_ID = 2**63 - 1
"""The largest id a row can have: a signed 64-bit integer (PostgreSQL BIGINT, SQLite INTEGER)."""
_CursorId = Annotated[int, msgspec.Meta(ge=1, le=MAX_ROW_ID)]


class InvalidCursor(ValueError):
    """A ``cursor`` this service did not hand out (422 naming it)."""

    field = "cursor"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decode_cursor(cursor: str) -> tuple[datetime.datetime, int]:
    """The (created_at, id) of the last plan of the previous page, decoded strictly: the id
    within the database's integer range, the moment in UTC (what encode_cursor writes; another
    offset could leave datetime's range when converted, year 1 at +14:00)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, plan_id = msgspec.json.decode(raw, type=tuple[datetime.datetime, _CursorId])
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        raise InvalidCursor("is not a cursor this service handed out") from None
    if created.utcoffset() != datetime.timedelta(0):
        raise InvalidCursor("is not a cursor this service handed out (its time is not UTC)")
    return created, plan_id


async def page(
    session: AsyncSession, filters: Filters, limit: int, cursor: str | None
) -> tuple[list[PlanRow], str | None]:
    """Newest first, ordered by (created_at, id) descending: stable under inserts."""
    where: list[ColumnElement[bool]] = []
    if filters.status is not None:
        where.append(PlanRow.status == filters.status)
    if filters.author is not None:
        where.append(PlanRow.author == filters.author)
    if filters.model is not None:
        where.append(PlanRow.model_slug == filters.model)
    if filters.gpu is not None:
        where.append(PlanRow.gpu_slug == filters.gpu)
    if filters.created_after is not None:
        where.append(PlanRow.created_at > filters.created_after)
    if filters.created_before is not None:
        where.append(PlanRow.created_at < filters.created_before)
    if cursor is not None:
        created, plan_id = decode_cursor(cursor)
        where.append(
            or_(
                PlanRow.created_at < created,
                and_(PlanRow.created_at == created, PlanRow.id < plan_id),
            )
        )
    rows = list(
        (
            await session.scalars(
                select(PlanRow)
                .where(*where)
                .order_by(PlanRow.created_at.desc(), PlanRow.id.desc())
                .limit(limit + 1)
            )
        ).all()
    )
    next_cursor = encode_cursor(rows[limit - 1]) if len(rows) > limit else None
    return rows[:limit], next_cursor
