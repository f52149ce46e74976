"""``evallens collector``: the OTLP receiver and Prometheus scraper, and span retention."""

import typer
from rich.console import Console

from evallens.settings import CollectorSettings

app = typer.Typer(help="OTLP/HTTP and gRPC trace receiver, Prometheus scraper, retention.")


@app.callback(invoke_without_command=True)
def run(
    ctx: typer.Context,
    insecure: bool = typer.Option(
        False, "--insecure", help="Listen beyond loopback WITHOUT authentication (not recommended)."
    ),
) -> None:
    """Run the collector (OTLP/HTTP on 127.0.0.1:4318, gRPC on :4317) until SIGTERM/SIGINT."""
    if ctx.invoked_subcommand is not None:
        return
    from collector.commands import run_collector

    def ready(collector: object) -> None:
        ports = (getattr(collector, "http_port", 0), getattr(collector, "grpc_port", 0))
        Console().print(f"collector ready: OTLP/HTTP port {ports[0]}, OTLP/gRPC port {ports[1]}")

    run_collector(CollectorSettings(), ready, insecure)


@app.command("prune")
def prune(
    older_than: str = typer.Option(..., "--older-than", help="Age of partitions to drop: 30d, 4w."),
) -> None:
    """Drop whole daily span partitions older than --older-than."""
    from collector.commands import prune as prune_partitions

    report = prune_partitions(CollectorSettings(), older_than)
    names = ", ".join(report.dropped) or "none"
    Console().print(f"dropped {len(report.dropped)} span partitions before {report.cutoff}: {names}")
