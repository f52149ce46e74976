"""Where the servers listen, read once so every client command derives its default URLs from it."""

from pydantic import Field
from pydantic_settings import BaseSettings

from evallens.settings._base import settings_config

ANY_ADDRESS = {"", "0.0.0.0", "::"}  # listening everywhere: a client on this machine uses loopback


def connect_host(host: str) -> str:
    """The host a client on this machine connects to for a server listening on ``host``."""
    if host in ANY_ADDRESS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


class ServiceAddressSettings(BaseSettings):
    """The reference service's address (``evallens service`` listens there, clients default to it)."""

    model_config = settings_config()

    service_host: str = Field(default="127.0.0.1", description="Address the service listens on.")
    service_port: int = Field(default=8000, ge=0, le=65535, description="Port the service listens on.")

    @property
    def service_url(self) -> str:
        """Base URL of the service for a client on this machine."""
        return f"http://{connect_host(self.service_host)}:{self.service_port}"
