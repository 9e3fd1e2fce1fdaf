"""One env.py for `alembic upgrade head` and `python -m service migrate`.

The URL comes from the command's config when it carries one (the CLI and tests set it), else
from DATABASE_URL, else the default SQLite file. Migrations run through a sync driver; on
PostgreSQL the whole upgrade is one transaction (transactional DDL).
"""

from logging.config import fileConfig

from advanced_alchemy.base import orm_registry
from alembic import context
from sqlalchemy import create_engine, pool

import service.auth
import service.catalogue.tables  # registers the catalogue tables
import service.plans.tables  # noqa: F401  (registers the plan tables)
from service.settings import Settings, ensure_sqlite_directory, sync_url

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = orm_registry.metadata


def database_url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    return sync_url(Settings.from_env().database_url)


def run_migrations_offline() -> None:
    context.configure(
        url=database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    url = database_url()
    ensure_sqlite_directory(url)
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
