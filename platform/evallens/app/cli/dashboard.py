"""``evallens dashboard``: the Streamlit app."""

from pathlib import Path

import typer

app = typer.Typer(help="The Streamlit dashboard on 127.0.0.1:8501.")
SCRIPT = Path(__file__).resolve().parents[1] / "streamlit_app.py"  # lends the dashboard mining's readers


@app.callback(invoke_without_command=True)
def run(
    ctx: typer.Context,
    port: int | None = typer.Option(None, help="Port to listen on (default: EVALLENS_DASHBOARD_PORT, 8501)."),
    insecure: bool = typer.Option(
        False, "--insecure", help="Listen beyond loopback WITHOUT a login (not recommended)."
    ),
) -> None:
    """Run the dashboard on 127.0.0.1 until interrupted."""
    if ctx.invoked_subcommand is not None:
        return
    from dashboard.serve import run_dashboard  # components load only when their command runs
    from evallens.auth import ensure_safe_bind
    from evallens.settings import DashboardSettings, DatabaseSettings

    settings = DashboardSettings()
    if port is not None:
        settings = settings.model_copy(update={"dashboard_port": port})
    ensure_safe_bind(
        settings.dashboard_host,
        settings.auth_enabled or settings.dashboard_password is not None,
        insecure,
        "the dashboard",
    )
    typer.echo(f"evallens dashboard on http://{settings.dashboard_host}:{settings.dashboard_port}")
    result = run_dashboard(settings, DatabaseSettings(), SCRIPT)
    raise typer.Exit(result.exit_code)
