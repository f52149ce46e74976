"""Settings for every component; the only place evallens reads the environment."""

from evallens.settings._base import (
    ENV_PREFIX,
    child_environment,
    project_name_problem,
    read_environment,
    set_process_environment,
)
from evallens.settings.addresses import ServiceAddressSettings
from evallens.settings.auth import AuthSettings
from evallens.settings.cases import CasesSettings
from evallens.settings.collector import CollectorSettings
from evallens.settings.dashboard import DashboardSettings
from evallens.settings.database import DatabaseSettings
from evallens.settings.demo import DemoSettings
from evallens.settings.evals import EvalSettings
from evallens.settings.rag import CacheSettings, GuardSettings, RagSettings
from evallens.settings.service import ServiceSettings

__all__ = [
    "ENV_PREFIX",
    "AuthSettings",
    "CacheSettings",
    "CasesSettings",
    "CollectorSettings",
    "DashboardSettings",
    "DatabaseSettings",
    "DemoSettings",
    "EvalSettings",
    "GuardSettings",
    "RagSettings",
    "ServiceAddressSettings",
    "ServiceSettings",
    "child_environment",
    "project_name_problem",
    "read_environment",
    "set_process_environment",
]
