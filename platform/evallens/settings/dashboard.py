"""How the Streamlit dashboard listens and guards itself."""

from pydantic import Field, SecretStr

from evallens.settings._base import ProjectName, settings_config
from evallens.settings.auth import AuthSettings


class DashboardSettings(AuthSettings):
    """The dashboard's address, scope and optional password."""

    model_config = settings_config()

    dashboard_host: str = Field(default="127.0.0.1", description="Address the dashboard listens on.")
    dashboard_port: int = Field(default=8501, ge=1, le=65535, description="Port the dashboard listens on.")
    dashboard_password: SecretStr | None = Field(
        default=None,
        description="When set, the dashboard asks for this password before showing any page.",
    )
    dashboard_project: ProjectName = Field(
        default="default", description="Project whose traces, runs and metrics the dashboard shows."
    )
    dashboard_max_rows: int = Field(
        default=200, ge=10, le=10_000, description="Most rows a table of traces or cases lists."
    )
    dashboard_statement_timeout_s: float = Field(
        default=60,
        gt=0,
        description="Longest a dashboard query may run before PostgreSQL cancels it, or wait for a free"
        " connection, before the page says so, instead of waiting on a locked table, an overloaded server"
        " or other pages' slow queries without end.",
    )
    dashboard_sign_in_attempts: int = Field(
        default=10,
        ge=1,
        description="Sign-ins (password or API key) one client address may try at once; after that one"
        " more a minute, so guessing a password takes years instead of hours. The address is the TCP"
        " peer's (X-Forwarded-For is not trusted): behind a proxy, all its viewers share the proxy's"
        " budget.",
    )
    dashboard_embed_ahead_s: float = Field(
        default=300,
        ge=0,
        description="Every this many seconds, embed in the background the questions the Cases page would"
        " embed for each window, so that a view does not wait for the embedding model; 0 turns it off.",
    )
