"""create_app(settings) -> Litestar: the only place where wiring happens."""

import logging

from advanced_alchemy.extensions.litestar import (
    AsyncSessionConfig,
    SQLAlchemyAsyncConfig,
    SQLAlchemyPlugin,
)
from litestar import Litestar
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from service.api.catalogue import catalogue_handlers
from service.api.chatops import chatops_handlers
from service.api.compute import compute_handlers
from service.api.health import health_handlers
from service.api.openapi import forbid_unknown_properties
from service.api.plans import plan_handlers
from service.api.problems import EXCEPTION_HANDLERS
from service.db import create_engine
from service.settings import Settings, ensure_sqlite_directory

VERSION = "0.1.0"


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or Settings.from_env()
    logging.basicConfig(level=settings.log_level.upper())
    db_config = SQLAlchemyAsyncConfig(
        engine_instance=create_engine(settings.database_url),
        session_config=AsyncSessionConfig(expire_on_commit=False),
        before_send_handler="autocommit",  # commit on 2xx, roll back on anything else
        create_all=False,  # the schema arrives by migration only
        set_default_exception_handler=False,  # keep problem details for every error
    )
    app = Litestar(
        route_handlers=[
            *health_handlers,
            *catalogue_handlers,
            *compute_handlers,
            *plan_handlers,
            *chatops_handlers,
        ],
        plugins=[SQLAlchemyPlugin(config=db_config)],
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=settings.max_request_body_bytes,
        state=State({"settings": settings, "db_config": db_config}),
        on_startup=[lambda: ensure_sqlite_directory(settings.database_url)],
        openapi_config=OpenAPIConfig(
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
    forbid_unknown_properties(app.openapi_schema)
    return app
