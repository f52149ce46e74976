"""Schema migrations with Alembic, driven from code so the CLI and tests share one path."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine, NullPool, create_engine, text
from sqlalchemy.exc import SQLAlchemyError

from evallens.db.engine import sqlalchemy_url
from evallens.errors import EvallensError

# The migrations live beside the source root (see DESIGN.md); evallens is installed editable.
MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"
MIGRATION_LOCK = 0x65766C6E  # pg_advisory_lock key: one process migrates, the others wait for it


class MigrationFailed(EvallensError):
    """A migration raised; PostgreSQL rolled the whole upgrade back."""


class SchemaTooNew(EvallensError):
    """The database is at a revision this evallens does not know: a newer evallens migrated it."""


def alembic_config(url: str, script_location: Path = MIGRATIONS_DIR) -> Config:
    """An Alembic configuration pointing at ``url``, without an ini file."""
    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.attributes["url"] = sqlalchemy_url(url)
    return config


def upgrade(url: str, revision: str = "head", script_location: Path = MIGRATIONS_DIR) -> None:
    """Migrate the database at ``url`` up to ``revision`` in one transaction; ``SchemaTooNew``, before
    any change, when a newer evallens migrated it."""
    engine = create_engine(sqlalchemy_url(url), poolclass=NullPool)
    try:
        known_revision(engine, script_location)
    finally:
        engine.dispose()
    _run(command.upgrade, alembic_config(url, script_location), revision)


def downgrade(url: str, revision: str, script_location: Path = MIGRATIONS_DIR) -> None:
    """Migrate the database at ``url`` down to ``revision``."""
    _run(command.downgrade, alembic_config(url, script_location), revision)


def _run(step: object, config: Config, revision: str) -> None:
    try:
        step(config, revision)  # type: ignore[operator]
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", error)).strip().splitlines()[0]
        raise MigrationFailed(f"migration to {revision} failed and was rolled back: {reason}") from None
    except CommandError as error:  # Alembic's own refusal, before any change: a revision it cannot find
        reason = str(error).strip().splitlines()[0]
        raise MigrationFailed(f"cannot migrate to {revision}: {reason}") from None


@contextlib.contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Hold the migration lock (a session advisory lock) while the block migrates: a second process
    migrating the same database waits for it, then finds the schema at head, instead of failing half-way
    on the tables the first one made (Alembic takes no lock of its own)."""
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
        connection.commit()
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
            connection.commit()


def known_revision(engine: Engine, script_location: Path = MIGRATIONS_DIR) -> str | None:
    """The revision the database is at (None for an empty database), or ``SchemaTooNew`` when this
    code has no such revision, naming both and what to do."""
    current = current_revision(engine)
    if current is None:
        return None
    config = Config()
    config.set_main_option("script_location", str(script_location))
    try:
        ScriptDirectory.from_config(config).get_revision(current)
    except CommandError:
        raise SchemaTooNew(
            f"the database schema is at revision {current}, newer than this evallens knows (its newest "
            f"is {head_revision(script_location)}): use the evallens version that migrated it, or a newer "
            "one; nothing was changed"
        ) from None
    return current


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(script_location: Path = MIGRATIONS_DIR) -> str | None:
    """The newest revision the code knows."""
    config = Config()
    config.set_main_option("script_location", str(script_location))
    return ScriptDirectory.from_config(config).get_current_head()
