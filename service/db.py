"""Database plumbing shared by the app and the CLI: engines, Alembic, readiness."""

import math
from functools import cache
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from service.settings import ensure_sqlite_directory, sync_url

ROOT = Path(__file__).resolve().parent.parent
MIGRATIONS_DIR = ROOT / "migrations"
ALEMBIC_INI = ROOT / "alembic.ini"


def alembic_config(database_url: str) -> Config:
    """Alembic's config for ``database_url`` (migrations always run through a sync driver)."""
    config = Config(str(ALEMBIC_INI)) if ALEMBIC_INI.exists() else Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    config.set_main_option("sqlalchemy.url", sync_url(database_url).replace("%", "%%"))
    return config


def migrate(database_url: str, revision: str = "head") -> None:
    ensure_sqlite_directory(database_url)
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)


@cache  # the scripts ship with the code: read them once, not on every /readyz probe (~10 ms)
def head_revision() -> str | None:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def _enable_sqlite_foreign_keys(dbapi_connection: Any, _record: Any) -> None:
    # SQLite ignores foreign keys unless asked, per connection.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def timeout_connect_args(
    database_url: str, connect_timeout_s: float | None, statement_timeout_s: float | None
) -> dict[str, Any]:
    """Per-driver timeouts: a database that hangs becomes an error (503), not a stuck request."""
    args: dict[str, Any] = {}
    if database_url.startswith(("postgresql+psycopg", "postgresql://", "postgresql+psycopg2")):
        if connect_timeout_s:
            args["connect_timeout"] = max(2, math.ceil(connect_timeout_s))  # libpq: whole s, >= 2
        if statement_timeout_s:
            args["options"] = f"-c statement_timeout={int(statement_timeout_s * 1000)}"
    elif database_url.startswith("postgresql+asyncpg"):
        if connect_timeout_s:
            args["timeout"] = connect_timeout_s
        if statement_timeout_s:
            args["command_timeout"] = statement_timeout_s
    elif database_url.startswith("sqlite") and statement_timeout_s:
        args["timeout"] = statement_timeout_s  # how long to wait for a lock
    return args


def create_engine(
    database_url: str,
    *,
    connect_timeout_s: float | None = None,
    statement_timeout_s: float | None = None,
    pool_timeout_s: float | None = None,
) -> AsyncEngine:
    options: dict[str, Any] = {
        "connect_args": timeout_connect_args(database_url, connect_timeout_s, statement_timeout_s)
    }
    if pool_timeout_s and not database_url.startswith("sqlite"):
        options["pool_timeout"] = pool_timeout_s
    engine = create_async_engine(database_url, pool_pre_ping=True, **options)
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _enable_sqlite_foreign_keys)
    return engine


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at (None: never migrated). Raises if it does not answer."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
        return await connection.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )
