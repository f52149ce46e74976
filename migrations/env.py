"""Alembic environment: the URL comes from evallens' settings (or from the caller), never from an ini."""

from typing import Any

from alembic import context
from sqlalchemy import create_engine, pool

import evallens.db.models  # noqa: F401  (registers every table on Base.metadata)
from evallens.db.base import Base
from evallens.db.engine import sqlalchemy_url
from evallens.db.partitions import is_partition_name

config = context.config


def _url() -> str:
    url = config.attributes.get("url")
    if url:
        return str(url)
    from evallens.db.server import open_database  # plain `alembic` CLI use
    from evallens.settings import DatabaseSettings

    return sqlalchemy_url(open_database(DatabaseSettings()).url)


def _include_object(*args: Any) -> bool:
    _, name, type_, _, _ = args
    # Daily span partitions are made by the app at run time, not by migrations.
    return not (type_ == "table" and name is not None and is_partition_name(name))


def run_migrations_online() -> None:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            include_object=_include_object,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("evallens migrations run online only: use `evallens db upgrade`")
run_migrations_online()
