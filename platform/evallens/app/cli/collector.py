"""``evallens collector``: the OTLP receiver and Prometheus scraper, span retention, the quarantine."""

from typing import Annotated

import orjson
import typer
from rich.console import Console

from evallens.app.cli._output import output_console, print_table
from evallens.settings import CollectorSettings
from evallens.settings.collector import DEFAULT_QUARANTINE_RETRY_BATCH

app = typer.Typer(help="OTLP/HTTP and gRPC trace receiver, Prometheus scraper, retention, quarantine.")
quarantine_app = typer.Typer(
    help="Spans the collector acknowledged but PostgreSQL refused: list, retry, drop.", no_args_is_help=True
)
app.add_typer(quarantine_app, name="quarantine")
IDS_HELP = "Quarantine ids (from `quarantine list`)."
PROJECT_HELP = "Only this project's spans."
MAX_BIGINT = 2**63 - 1  # PostgreSQL's bigint: past it a query fails (a traceback) instead of finding nothing
QuarantineIds = Annotated[list[int] | None, typer.Argument(max=MAX_BIGINT, help=IDS_HELP)]


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
    """Drop whole daily span partitions, and the metric samples and GenAI content (prompts and answers)
    of those days, older than --older-than."""
    from collector.commands import prune as prune_partitions

    report = prune_partitions(CollectorSettings(), older_than)
    names = ", ".join(report.dropped) or "none"
    Console().print(f"dropped {len(report.dropped)} span partitions before {report.cutoff}: {names}")
    Console().print(f"deleted {report.num_samples_deleted} metric samples before {report.cutoff}")
    Console().print(f"deleted {report.num_content_deleted} GenAI content events before {report.cutoff}")


@quarantine_app.command("list")
def quarantine_list(
    project: Annotated[str | None, typer.Option(help=PROJECT_HELP)] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_BIGINT, help="Most entries listed, newest first.")
    ] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List quarantined spans with PostgreSQL's reason, newest first."""
    from collector.commands import quarantine_list as listing_of

    listing = listing_of(CollectorSettings(), project, limit)
    if as_json:
        rows = [vars(entry) for entry in listing.entries]
        typer.echo(orjson.dumps({"total": listing.num_total, "entries": rows}, option=orjson.OPT_INDENT_2))
        return
    cells = [
        (str(e.id), e.project, e.trace_id, e.span_id, e.name, e.reason, f"{e.quarantined_at:%F %T}")
        for e in listing.entries
    ]
    console = output_console()
    print_table(console, ("id", "project", "trace", "span", "name", "reason", "quarantined (UTC)"), cells)
    console.print(f"{listing.num_total} quarantined spans", markup=False)
    if listing.num_dead_letter_files:
        console.print(
            f"{listing.num_dead_letter_files} dead-letter files wait for the collector to move them in"
        )


@quarantine_app.command("retry")
def quarantine_retry(
    ids: QuarantineIds = None,
    every: Annotated[bool, typer.Option("--all", help="Every quarantined span (of --project).")] = False,
    project: Annotated[str | None, typer.Option(help=PROJECT_HELP)] = None,
    batch_size: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_BIGINT,
            help="Quarantined spans read and written at a time: fewer hold less in memory, more make "
            "fewer transactions.",
        ),
    ] = DEFAULT_QUARANTINE_RETRY_BATCH,
) -> None:
    """Write quarantined spans again (after fixing the cause); stored ones leave the quarantine."""
    from collector.commands import quarantine_retry as retry

    report = retry(CollectorSettings(), ids or [], every, project, batch_size)
    Console().print(f"{report.num_stored} stored, {report.num_still_refused} still refused (kept)")


@quarantine_app.command("drop")
def quarantine_drop(
    ids: QuarantineIds = None,
    every: Annotated[bool, typer.Option("--all", help="Every quarantined span (of --project).")] = False,
    project: Annotated[str | None, typer.Option(help=PROJECT_HELP)] = None,
) -> None:
    """Delete quarantined spans for good."""
    from collector.commands import quarantine_drop as drop

    Console().print(f"{drop(CollectorSettings(), ids or [], every, project)} quarantined spans dropped")
