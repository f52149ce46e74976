"""Who may write and read: API keys on or off, and the per-key rate limit."""

from pydantic import Field
from pydantic_settings import BaseSettings

from evallens.settings._base import settings_config


class AuthSettings(BaseSettings):
    """Authentication by project-scoped API keys (off by default: the local demo needs no key)."""

    model_config = settings_config()

    auth_enabled: bool = Field(
        default=False,
        description="Require an API key (`evallens keys create`) on the collector, service and dashboard.",
    )
    auth_rate_limit_per_s: float = Field(
        default=50.0, gt=0, description="Requests per second each key may make to one process, sustained."
    )
    auth_rate_limit_burst: int = Field(
        default=200, ge=1, description="Requests a key may make at once before the rate limit applies."
    )
    auth_cache_ttl_s: float = Field(
        default=5.0,
        ge=0,
        description="Seconds a process trusts a checked key before asking PostgreSQL again.",
    )
