"""Saved plans against a real database (SQLite; PostgreSQL when TEST_DATABASE_URL is set):
the schema matches the ORM, the version check lives in the UPDATE, and the migration reverses."""

import asyncio
from collections.abc import AsyncIterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import inspect, select
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from service.db import create_engine, downgrade, migrate
from service.plans import actions, store
from service.plans.tables import IdempotencyKeyRow, PlanEventRow, PlanRow
from service.plans.workflow import PreconditionFailed
from service.schemas.plan import PlanRequest
from service.settings import sync_url

PLAN_TABLES = {"plans", "plan_events", "plan_idempotency_keys"}
SIX_STEP = PlanRequest(model="llama-3.1-70b", gpu="h100", concurrency=40, context_tokens=8192)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def submitted_plan(engine: AsyncEngine) -> int:
    async with async_sessionmaker(engine, expire_on_commit=False)() as session:
        async with session.begin():
            plan, created = await actions.create(session, "ann", "db race", "", SIX_STEP)
            assert created
        async with session.begin():
            await actions.submit(session, plan.id, "ann", '"1"')
    return plan.id


def test_the_migrated_schema_matches_the_orm(database_url: str) -> None:
    engine = create_sync_engine(sync_url(database_url))
    metadata = PlanRow.metadata
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            diffs = [
                diff
                for diff in compare_metadata(context, metadata)
                if PLAN_TABLES & {getattr(item, "name", None) for item in _items(diff)}
                or any(
                    getattr(item, "table", None) is not None and item.table.name in PLAN_TABLES
                    for item in _items(diff)
                )
            ]
    finally:
        engine.dispose()
    assert diffs == []


def _items(diff: object) -> list[object]:
    """compare_metadata's entries are tuples (or lists of tuples for column changes)."""
    if isinstance(diff, list):
        return [item for entry in diff for item in entry if not isinstance(item, str)]
    assert isinstance(diff, tuple)
    return [item for item in diff if not isinstance(item, str)]


async def test_the_version_check_is_in_the_update(engine: AsyncEngine) -> None:
    """Two writers read version 2; the first UPDATE wins, the second matches no row: 412.

    The loser's UPDATE is issued while the winner's transaction is still open, so PostgreSQL
    makes it wait on the row lock (and SQLite on the writer lock), then re-check the WHERE.
    """
    plan_id = await submitted_plan(engine)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as first, sessions() as second:
        row_1 = await store.get(first, plan_id)
        row_2 = await store.get(second, plan_id)
        assert row_1.version == row_2.version == 2
        await store.update_versioned(first, row_1, 2, status="approved")
        loser = asyncio.ensure_future(store.update_versioned(second, row_2, 2, status="rejected"))
        await asyncio.sleep(0.3)  # the loser is now blocked on the winner's lock
        await first.commit()
        with pytest.raises(PreconditionFailed) as failed:
            await loser
        await second.rollback()
    assert failed.value.current_version == 3
    async with sessions() as check:
        row = await store.get(check, plan_id)
        assert (row.status, row.version) == ("approved", 3)


async def test_idempotency_keys_are_unique_per_author(engine: AsyncEngine) -> None:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as session, session.begin():
        first = await store.claim_key(session, "ann", "k-1", "0" * 64)
        again = await store.claim_key(session, "ann", "k-1", "1" * 64)
        other = await store.claim_key(session, "ben", "k-1", "0" * 64)
        assert first is not None and other is not None and again is None
        await session.rollback()
    async with sessions() as session:
        assert (await session.scalars(select(IdempotencyKeyRow))).all() == []


async def test_deleting_a_plan_takes_its_events(engine: AsyncEngine) -> None:
    plan_id = await submitted_plan(engine)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as session, session.begin():
        await session.delete(await store.get(session, plan_id))
    async with sessions() as session:
        events = await session.scalars(select(PlanEventRow).where(PlanEventRow.plan_id == plan_id))
        assert events.all() == []


def test_the_migration_reverses(database_url: str) -> None:
    engine = create_sync_engine(sync_url(database_url))

    def tables() -> set[str]:
        return set(inspect(engine).get_table_names())

    try:
        assert tables() >= PLAN_TABLES
        downgrade(database_url, "0002")
        assert not PLAN_TABLES & tables()
        assert "gpus" in tables()
        migrate(database_url)
        assert tables() >= PLAN_TABLES
    finally:
        engine.dispose()
