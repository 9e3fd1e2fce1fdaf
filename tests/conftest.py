"""Shared fixtures: a freshly migrated database per test module, on SQLite always and on
PostgreSQL too when TEST_DATABASE_URL is set (then a PostgreSQL failure fails the run)."""

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import create_engine, text
from sqlalchemy.ext.asyncio import async_sessionmaker

from service.app import create_app
from service.auth import create_key
from service.db import create_engine as create_async_engine
from service.db import migrate
from service.settings import Settings, sync_url

BACKENDS = ["sqlite", *(["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [])]


def fresh_postgresql(url: str) -> str:
    """Empty the test database's public schema, so migrations start from nothing."""
    engine = create_engine(sync_url(url))
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    return url


def fresh_database_url(backend: str, directory: Path) -> str:
    """An empty database of ``backend``: a new SQLite file, or the wiped PostgreSQL database."""
    if backend == "postgresql":
        return fresh_postgresql(os.environ["TEST_DATABASE_URL"])
    return f"sqlite+aiosqlite:///{directory / 'planner.db'}"


@pytest.fixture(scope="module", params=BACKENDS)
def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database migrated to head, fresh for each test module and backend."""
    url = fresh_database_url(request.param, tmp_path_factory.mktemp("db"))
    migrate(url)
    yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url)


@pytest.fixture
def app(settings: Settings) -> Litestar:
    return create_app(settings)


@pytest.fixture
async def client(app: Litestar) -> AsyncIterator[AsyncTestClient[Litestar]]:
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


async def new_key(database_url: str, role: str, principal: str = "tester") -> str:
    engine = create_async_engine(database_url)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            return await create_key(session, principal, role)  # type: ignore[arg-type]
    finally:
        await engine.dispose()


@pytest.fixture
async def admin_headers(database_url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {await new_key(database_url, 'admin')}"}
