"""Schema migrations with Alembic, driven from code so the CLI and tests share one path."""

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from evallens.db.engine import sqlalchemy_url
from evallens.errors import EvallensError

# The migrations live beside the source root (see DESIGN.md); evallens is installed editable.
MIGRATIONS_DIR = Path(__file__).resolve().parents[3] / "migrations"


class MigrationFailed(EvallensError):
    """A migration raised; PostgreSQL rolled the whole upgrade back."""


def alembic_config(url: str, script_location: Path = MIGRATIONS_DIR) -> Config:
    """An Alembic configuration pointing at ``url``, without an ini file."""
    config = Config()
    config.set_main_option("script_location", str(script_location))
    config.attributes["url"] = sqlalchemy_url(url)
    return config


def upgrade(url: str, revision: str = "head", script_location: Path = MIGRATIONS_DIR) -> None:
    """Migrate the database at ``url`` up to ``revision`` in one transaction."""
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


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(script_location: Path = MIGRATIONS_DIR) -> str | None:
    """The newest revision the code knows."""
    config = Config()
    config.set_main_option("script_location", str(script_location))
    return ScriptDirectory.from_config(config).get_current_head()
