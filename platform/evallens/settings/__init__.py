"""Settings for every component; the only place evallens reads the environment."""

from evallens.settings._base import (
    ENV_PREFIX,
    child_environment,
    read_environment,
    set_process_environment,
)
from evallens.settings.database import DatabaseSettings
from evallens.settings.service import ServiceSettings

__all__ = [
    "ENV_PREFIX",
    "DatabaseSettings",
    "ServiceSettings",
    "child_environment",
    "read_environment",
    "set_process_environment",
]
