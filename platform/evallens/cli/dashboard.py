"""``evallens dashboard``: the Streamlit app."""

import typer

app = typer.Typer(help="The Streamlit dashboard on 127.0.0.1:8501.")


@app.callback(invoke_without_command=True)
def run(
    ctx: typer.Context,
    port: int | None = typer.Option(None, help="Port to listen on (default: EVALLENS_DASHBOARD_PORT, 8501)."),
) -> None:
    """Run the dashboard on 127.0.0.1 until interrupted."""
    if ctx.invoked_subcommand is not None:
        return
    from dashboard.serve import run_dashboard  # components load only when their command runs
    from evallens.settings import DashboardSettings, DatabaseSettings

    settings = DashboardSettings()
    if port is not None:
        settings = settings.model_copy(update={"dashboard_port": port})
    typer.echo(f"evallens dashboard on http://{settings.dashboard_host}:{settings.dashboard_port}")
    result = run_dashboard(settings, DatabaseSettings())
    raise typer.Exit(result.exit_code)
