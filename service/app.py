"""create_app(settings) -> Litestar: the only place where wiring happens."""

import contextlib
from collections.abc import Awaitable, Callable

from advanced_alchemy.extensions.litestar import (
    AsyncSessionConfig,
    SQLAlchemyAsyncConfig,
    SQLAlchemyPlugin,
)
from litestar import Litestar, Router
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from service.api.cached_catalogue import paths_without_database
from service.api.catalogue import catalogue_handlers
from service.api.chatops import chatops_handlers
from service.api.compute import compute_handlers
from service.api.docs import assets_router, render_plugins
from service.api.errors import PROBLEM_DETAILS
from service.api.guards import KeyVerifier, drop_open_guards
from service.api.health import health_handlers
from service.api.negotiation import NEGOTIATED, negotiate
from service.api.openapi import (
    declare_negotiation,
    document_retry_after,
    forbid_unknown_properties,
    state_bounds,
)
from service.api.plan_picture import picture_handlers
from service.api.plans import plan_handlers
from service.api.speed import speed_handlers
from service.api.transactions import UNBOUNDED_PATHS as NO_DATABASE_PATHS
from service.api.transactions import RequestTransaction
from service.api.verify import verify_handlers
from service.catalogue.cache import CatalogueCache
from service.chatops.replay import ReplayGuard
from service.db import create_engine, settle_abandoned
from service.observability import (
    UNLIMITED_PATHS,
    Metrics,
    RateLimiter,
    RequestMiddleware,
    configure_logging,
    metrics_endpoint,
)
from service.settings import Settings, ensure_sqlite_directory
from service.web import web_handlers

VERSION = "0.1.0"


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)
    engine = create_engine(
        settings.database_url,
        connect_timeout_s=settings.db_connect_timeout_s,
        statement_timeout_s=settings.db_statement_timeout_s,
        pool_timeout_s=settings.db_pool_timeout_s,
    )
    metrics = Metrics()
    # The computations read this in-memory catalogue (see service/catalogue/cache.py).
    cache = CatalogueCache(
        engine,
        settings.catalogue_refresh_s,
        on_error=lambda _exc: metrics.database_error("catalogue"),
        timeout_s=settings.db_request_deadline_s,
    )
    db_config = SQLAlchemyAsyncConfig(
        engine_instance=engine,
        session_config=AsyncSessionConfig(expire_on_commit=False),
        create_all=False,  # the schema arrives by migration only
        # No "autocommit": RequestTransaction below commits, and answers for a failed commit.
        set_default_exception_handler=False,  # keep problem details for every error
    )
    # Shared by RequestMiddleware and the guards; bounded like every request's database work.
    keys = KeyVerifier(db_config.get_session, timeout_s=settings.db_request_deadline_s)
    app = Litestar(
        route_handlers=[
            *health_handlers,
            # The API: Accept, Content-Type and the JSON body checked before the handler runs.
            Router(
                "/",
                route_handlers=[
                    *catalogue_handlers,
                    *compute_handlers,
                    *speed_handlers,
                    *picture_handlers,
                    *verify_handlers,
                    *plan_handlers,
                ],
                before_request=negotiate,
                opt={NEGOTIATED: True},
            ),
            *chatops_handlers,  # Slack posts a form, answered as JSON
            metrics_endpoint,
            *web_handlers,  # the browser page: static files, outside the API router
            assets_router(),  # the /schema docs pages' scripts and styles, offline
        ],
        plugins=[SQLAlchemyPlugin(config=db_config), PROBLEM_DETAILS],
        request_max_body_size=settings.max_request_body_bytes,
        logging_config=None,  # configure_logging owns the root logger: JSON lines only
        state=State(
            {
                "settings": settings,
                "db_config": db_config,
                "metrics": metrics,
                "cache": cache,
                "slack_replays": ReplayGuard(),  # per replica: see service/chatops/replay.py
                "key_verifier": keys,
            }
        ),
        on_startup=[lambda: ensure_sqlite_directory(settings.database_url), _warm(cache)],
        on_shutdown=[cache.close, settle_abandoned],
        openapi_config=OpenAPIConfig(
            render_plugins=render_plugins(),
            title="GPU capacity planner",
            version=VERSION,
            description=(
                "Where does this model fit, on how many of which GPUs, how much room is left. "
                "Memory in bytes (_bytes), bandwidth in bytes per second (_bytes_per_s), "
                "time in seconds (_s). Errors are RFC 9457 problem details."
            ),
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(
                        type="http", scheme="bearer", description="API key from `keys create`"
                    )
                }
            ),
        ),
    )
    # RequestTransaction (below) ends and closes the request's session before the answer
    # starts; advanced-alchemy's before-send hook would only look for it again on every message.
    app.before_send = [h for h in app.before_send if h is not db_config.before_send_handler]
    drop_open_guards(app)
    forbid_unknown_properties(app.openapi_schema)
    declare_negotiation(app)
    state_bounds(app.openapi_schema)
    document_retry_after(app.openapi_schema, UNLIMITED_PATHS)
    # Outside routing and the exception handlers: every request gets an id, a log line,
    # metrics and the rate limit, 404s and 413s included.
    # Inside it: the request's transaction (commit on 2xx, roll back otherwise) and deadline.
    transaction = RequestTransaction(
        app.asgi_handler,
        deadline_s=settings.db_request_deadline_s,
        retry_after_s=settings.retry_after_s,
        session_key=db_config.session_scope_key,
        on_database_error=lambda: metrics.database_error("request"),
        unbounded_paths=NO_DATABASE_PATHS | paths_without_database(app),
    )
    limited = settings.rate_limit_per_minute > 0
    limiter = RateLimiter(settings.rate_limit_per_minute, settings.rate_limit_burst)
    failures = settings.auth_failures_per_minute
    app.asgi_handler = RequestMiddleware(
        transaction,
        metrics=metrics,
        cache=cache,
        limiter=limiter if limited else None,
        keys=keys,
        auth_failures=RateLimiter(failures, failures) if limited and failures > 0 else None,
        proxy_header=settings.trusted_proxy_header,
    )
    return app


def _warm(cache: CatalogueCache) -> Callable[[], Awaitable[None]]:
    async def warm() -> None:
        """Load the catalogue at startup when the database answers (else on first use)."""
        with contextlib.suppress(Exception):  # logged and counted by the cache
            await cache.refresh()

    return warm
