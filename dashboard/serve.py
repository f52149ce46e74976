"""Start the dashboard as a ``streamlit run`` child process: loopback, headless, no usage statistics."""

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evallens.db.server import database
from evallens.settings import DashboardSettings, DatabaseSettings, child_environment

APP_FILE = Path(__file__).with_name("app.py")


@dataclass(frozen=True)
class DashboardRun:
    """How a dashboard process ended."""

    url: str
    exit_code: int


def streamlit_command(settings: DashboardSettings) -> list[str]:
    """The ``streamlit run`` command line for ``settings``: headless, no telemetry, no file watcher."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP_FILE),
        f"--server.address={settings.dashboard_host}",
        f"--server.port={settings.dashboard_port}",
        "--server.headless=true",
        "--server.fileWatcherType=none",
        "--server.runOnSave=false",
        "--browser.gatherUsageStats=false",
        "--global.developmentMode=false",
        "--client.toolbarMode=minimal",
        "--client.showErrorDetails=false",
        "--theme.base=light",
    ]


def dashboard_environment(database_url: str) -> dict[str, str]:
    """The child's environment: the resolved database, and Streamlit's own telemetry switched off."""
    return child_environment(
        {
            "EVALLENS_DATABASE_URL": database_url,
            "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
            "STREAMLIT_SERVER_HEADLESS": "true",
        }
    )


def run_dashboard(settings: DashboardSettings, database_settings: DatabaseSettings) -> DashboardRun:
    """Run the dashboard until it exits, on the configured PostgreSQL or the embedded default."""
    with database(database_settings) as server:
        process = subprocess.run(
            streamlit_command(settings), env=dashboard_environment(server.url), check=False
        )
    url = f"http://{settings.dashboard_host}:{settings.dashboard_port}"
    return DashboardRun(url=url, exit_code=process.returncode)
