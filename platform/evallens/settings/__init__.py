"""Settings for every component; the only place evallens reads the environment."""

from evallens.settings._base import (
    ENV_PREFIX,
    child_environment,
    read_environment,
    set_process_environment,
)
from evallens.settings.collector import CollectorSettings
from evallens.settings.database import DatabaseSettings

__all__ = [
    "ENV_PREFIX",
    "CollectorSettings",
    "DatabaseSettings",
    "child_environment",
    "read_environment",
    "set_process_environment",
]
