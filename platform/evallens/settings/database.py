"""Where evallens keeps its data and which PostgreSQL it talks to."""

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from evallens.settings._base import DEFAULT_DATA_DIR, DataDir, settings_config


class DatabaseSettings(BaseSettings):
    """PostgreSQL connection: an external server by URL, or the embedded default."""

    model_config = settings_config()

    database_url: str | None = Field(
        default=None,
        description=(
            "SQLAlchemy/libpq URL of an external PostgreSQL 15+ server "
            "(e.g. postgresql://user:pw@host:5432/evallens). Unset: start the embedded server."
        ),
    )
    data_dir: DataDir = Field(
        default=DEFAULT_DATA_DIR,
        description="Directory for evallens' own data: the embedded PostgreSQL, models, logs, spools.",
    )
    database_connect_timeout_s: int = Field(
        default=5,
        ge=1,
        description="Seconds to wait for a PostgreSQL connection before giving up with a clear error.",
    )
    database_migrate: bool = Field(
        default=False,
        description=(
            "Migrate an external server's schema to the code's revision when a command starts "
            "(the embedded default is always migrated on start)."
        ),
    )
    partition_days_ahead: int = Field(
        default=2,
        ge=0,
        le=60,
        description="How many daily span partitions to create ahead of today.",
    )

    @field_validator("data_dir")
    @classmethod
    def _expand_data_dir(cls, value: Path) -> Path:
        return value.expanduser()

    @property
    def embedded_pgdata(self) -> Path:
        """Data directory of the embedded PostgreSQL server."""
        return self.data_dir / "postgres"
