"""One Settings Struct, read from environment variables. Only create_app and the CLI read it."""

import os
import re
from pathlib import Path

import msgspec

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///var/planner.db"
MiB = 2**20


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database_url: str = DEFAULT_DATABASE_URL
    """SQLAlchemy async URL: the default SQLite file, or postgresql+psycopg://user@host:port/db."""
    require_auth: bool = False
    """When true, catalogue reads and computations need a key (viewer or above) too."""
    host: str = "127.0.0.1"
    port: int = 8000
    max_request_body_bytes: int = MiB
    log_level: str = "INFO"
    slack_signing_secret: str = msgspec.field(default="")
    """Slack app signing secret; empty: POST /chatops/slack is disabled (404)."""
    # Operations (see deploy/README.md): catalogue cache, database timeouts, limits, shutdown.
    catalogue_refresh_s: float = 5.0
    """How often (at most) a replica checks whether the catalogue changed in the database."""
    db_connect_timeout_s: float = 5.0
    db_statement_timeout_s: float = 10.0
    db_pool_timeout_s: float = 5.0
    db_request_deadline_s: float = 15.0
    """Every request answers within this (503 + Retry-After, its transaction rolled back) even
    when the database stops answering mid-call (a partition sends no error); 0 disables."""
    db_readiness_timeout_s: float = 2.0
    """/readyz answers 503 when the database takes longer than this to answer its probe."""
    retry_after_s: int = 5
    """Retry-After on a 503 answered because the database does not answer."""
    rate_limit_per_minute: int = 600
    """Requests per minute per verified principal (anonymous callers and failed authentications:
    per client address, see trusted_proxy_header); 0 disables every rate limit."""
    rate_limit_burst: int = 120
    auth_failures_per_minute: int = 20
    """Failed authentications (a key that is unknown or inactive) allowed per client address a
    minute, as many at once; past it a 429 without looking the key up. 0 disables this limit
    (RATE_LIMIT_PER_MINUTE=0 disables both)."""
    trusted_proxy_header: str = ""
    """Where a trusted reverse proxy puts the caller's address, e.g. X-Forwarded-For: its last
    comma-separated value (the one that proxy appended) keys the rate limit of anonymous and
    failed-authentication requests and goes into the log. Empty (default): the socket peer
    address, and any such header is ignored. Set it only when every request comes through that
    proxy; else a client can claim any address."""
    public_base_url: str = ""
    """Where callers reach the service, e.g. https://planner.internal: links the service hands
    out (a chat answer's memory picture, GET /plan.svg) start with it. Empty (default): relative
    links, /plan.svg?..."""
    workers: int = 1
    """Server processes (uvicorn workers) ``serve`` starts on one port: Python computes on one
    core per process, so WORKERS=N uses N cores. Each worker keeps its own rate limit, catalogue
    cache and metrics, like a replica (see deploy/README.md, "Several workers")."""
    shutdown_grace_s: float = 20.0
    """On SIGTERM: stop accepting, let in-flight requests finish for up to this long."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "Settings":
        env = dict(os.environ if environ is None else environ)
        raw: dict[str, str] = {
            name: env[name.upper()]
            for name in cls.__struct_fields__
            if env.get(name.upper(), "").strip()
        }
        # msgspec converts "8000" -> 8000 and "true"/"1" -> True with strict=False.
        return msgspec.convert(raw, cls, strict=False)

    def __repr__(self) -> str:
        """Never show secrets: the signing secret, and a password inside the database URL."""
        shown = {
            name: getattr(self, name)
            for name in self.__struct_fields__
            if name not in ("slack_signing_secret", "database_url")
        }
        url = re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", self.database_url)
        secret = "***" if self.slack_signing_secret else ""
        fields = ", ".join(f"{k}={v!r}" for k, v in shown.items())
        return f"Settings(database_url={url!r}, slack_signing_secret={secret!r}, {fields})"

    @property
    def is_default_sqlite(self) -> bool:
        return self.database_url == DEFAULT_DATABASE_URL


def sqlite_path(database_url: str) -> Path | None:
    """The file behind a SQLite URL (None for other databases or in-memory SQLite)."""
    prefix, _, rest = database_url.partition(":///")
    if not prefix.startswith("sqlite") or not rest or rest == ":memory:":
        return None
    return Path(rest.split("?", 1)[0])


def ensure_sqlite_directory(database_url: str) -> None:
    """SQLite creates the file but not its folder (var/ on a fresh clone)."""
    path = sqlite_path(database_url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)


def sync_url(database_url: str) -> str:
    """The same database through a synchronous driver, for Alembic and the CLI.

    psycopg 3 serves both modes under one name; aiosqlite and asyncpg have sync twins.
    """
    for async_driver, sync_driver in (
        ("sqlite+aiosqlite://", "sqlite://"),
        ("postgresql+asyncpg://", "postgresql+psycopg://"),
        ("postgresql+psycopg_async://", "postgresql+psycopg://"),
    ):
        if database_url.startswith(async_driver):
            return sync_driver + database_url[len(async_driver) :]
    return database_url
