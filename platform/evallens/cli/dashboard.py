"""``evallens dashboard``: the Streamlit app."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="The Streamlit dashboard on 127.0.0.1:8501.")


@app.callback(invoke_without_command=True)
def run(ctx: typer.Context) -> None:
    """Run the dashboard."""
    if ctx.invoked_subcommand is None:
        not_built("dashboard")
