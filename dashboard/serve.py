"""Start the dashboard as a ``streamlit run`` child process: loopback, headless, no usage statistics.

The script Streamlit runs is the caller's (the entry layer's ``streamlit_app.py``): it lends the
dashboard what it may not import itself.
"""

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evallens.db.server import database
from evallens.settings import DashboardSettings, DatabaseSettings, child_environment


@dataclass(frozen=True)
class DashboardRun:
    """How a dashboard process ended."""

    url: str
    exit_code: int


def streamlit_command(settings: DashboardSettings, script: Path) -> list[str]:
    """The ``streamlit run script`` command line for ``settings``: headless, no telemetry, no file watcher."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
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
    """The child's environment: the resolved database, Streamlit's own telemetry switched off, and no
    peer trusted to name its client's address: a viewer's address (``st.context.ip_address``, which
    the sign-in limiter counts by) is its TCP peer's."""
    return child_environment(
        {
            "EVALLENS_DATABASE_URL": database_url,
            "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
            "STREAMLIT_SERVER_HEADLESS": "true",
            # Streamlit serves with uvicorn, which takes the address in X-Forwarded-For from peers in
            # FORWARDED_ALLOW_IPS (127.0.0.1 and ::1 unless set); Streamlit has no option for it
            "FORWARDED_ALLOW_IPS": "",
        }
    )


def run_dashboard(
    settings: DashboardSettings, database_settings: DatabaseSettings, script: Path
) -> DashboardRun:
    """Run ``script`` (which calls ``dashboard.app.run``) until it exits, on the configured PostgreSQL
    or the embedded default."""
    with database(database_settings) as server:
        command = streamlit_command(settings, script)
        process = subprocess.Popen(command, env=dashboard_environment(server.url))
        try:
            exit_code = process.wait()
        finally:
            # a terminated or interrupted CLI must not leave Streamlit running on the port
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    url = f"http://{settings.dashboard_host}:{settings.dashboard_port}"
    return DashboardRun(url=url, exit_code=exit_code)
