"""Database plumbing shared by the app and the CLI: engines, Alembic, readiness, time bounds."""

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

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
log = logging.getLogger("service.db")
T = TypeVar("T")


def alembic_config(database_url: str) -> Config:
    """Alembic's config for ``database_url`` (migrations always run through a sync driver)."""
    config = Config(str(ALEMBIC_INI)) if ALEMBIC_INI.exists() else Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    config.set_main_option("sqlalchemy.url", sync_url(database_url).replace("%", "%%"))
    return config


def migrate(database_url: str, revision: str = "head", *, quiet: bool = False) -> None:
    """``quiet``: alembic's log lines (each revision's docstring) are not printed, so that a
    benchmark's own output stays readable."""
    ensure_sqlite_directory(database_url)
    config = alembic_config(database_url)
    if not quiet:
        command.upgrade(config, revision)
        return
    config.attributes["configure_logger"] = False  # migrations/env.py: no fileConfig
    logger = logging.getLogger("alembic")
    level = logger.level
    logger.setLevel(logging.WARNING)  # also where an earlier migration configured it
    try:
        command.upgrade(config, revision)
    finally:
        logger.setLevel(level)


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
            # A partition sends no error: the server-side statement_timeout never reaches us.
            # libpq's TCP options make the kernel give up on a silent peer: keepalive probes
            # on an idle connection (after connect_timeout s, then 3 probes 1 s apart), and
            # tcp_user_timeout on bytes sent but not acknowledged for connect_timeout s.
            args |= {
                "keepalives": 1,
                "keepalives_idle": max(1, math.ceil(connect_timeout_s)),
                "keepalives_interval": 1,
                "keepalives_count": 3,
                "tcp_user_timeout": math.ceil(connect_timeout_s * 1000),
            }
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


# Time bounds --------------------------------------------------------------------------------

_abandoned: set["asyncio.Task[Any]"] = set()
REAP_GRACE_S = 1.0
REAP_ATTEMPTS = 5


async def _reap(task: "asyncio.Task[Any]", after: Callable[[], Awaitable[None]] | None) -> None:
    """Cancel an abandoned database call until it ends. One cancel is not always enough:
    psycopg answers the first by sending the server a cancel request and waiting for the
    query to end (up to 5 + 5 s, over a network that may be the one that is gone); a second
    cancel makes it close the connection at once."""
    for _ in range(REAP_ATTEMPTS):
        if task.done():
            break
        task.cancel()
        await asyncio.wait({task}, timeout=REAP_GRACE_S)
    if not task.done():
        log.warning("an abandoned database call did not end after %d cancels", REAP_ATTEMPTS)
        return
    if not task.cancelled() and task.exception() is not None:
        log.debug("abandoned database call ended with %r", task.exception())
    if after is not None:
        try:
            await after()
        except Exception as exc:  # cleanup of a call already given up on: log, never raise
            log.debug("cleanup after an abandoned database call failed: %r", exc)


def abandon(task: "asyncio.Task[Any]", after: Callable[[], Awaitable[None]] | None = None) -> None:
    """Stop waiting for ``task``: it is cancelled (repeatedly) in the background, then
    ``after`` runs (once the task has ended; never while it still runs)."""
    reaper = asyncio.ensure_future(_reap(task, after))
    _abandoned.add(reaper)
    reaper.add_done_callback(_abandoned.discard)


async def settle_abandoned() -> None:
    """Wait for the abandoned calls to end (shutdown; tests)."""
    if _abandoned:
        await asyncio.wait(set(_abandoned), timeout=REAP_GRACE_S * (REAP_ATTEMPTS + 1))


async def within(seconds: float, call: Awaitable[T]) -> T:
    """``call``'s result, or TimeoutError once ``seconds`` have passed. Unlike asyncio.timeout
    this does not wait for the cancelled call to unwind (psycopg may take 10 s to give up on a
    frozen network): the call runs in its own task, abandoned on time-out (see abandon)."""
    task = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except BaseException:  # our caller was cancelled (its own deadline): stop the call too
        abandon(task)
        raise
    if not done:
        abandon(task)
        raise TimeoutError(f"the database did not answer within {seconds:g} s")
    return task.result()
