"""``evallens collector``: the OTLP receiver and Prometheus scraper."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="OTLP/HTTP and gRPC trace receiver, Prometheus scraper, retention.")


@app.callback(invoke_without_command=True)
def run(ctx: typer.Context) -> None:
    """Run the collector on 127.0.0.1:4318 (HTTP) and :4317 (gRPC)."""
    if ctx.invoked_subcommand is None:
        not_built("collector")
