"""Builds the Typer app from one module per command group and turns user errors into one line."""

import sys

import typer

from evallens.cli import cases, collector, dashboard, db, demo, eval, gate, kb, keys, model, prices, service
from evallens.errors import EvallensError

EXIT_ERROR = 2


def create_cli() -> typer.Typer:
    """The ``evallens`` command with every group of DESIGN.md registered."""
    cli = typer.Typer(
        name="evallens",
        help="Evaluate and observe LLM/RAG services: traces, eval replays, CI gates, a dashboard.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    cli.add_typer(db.app, name="db")
    cli.add_typer(collector.app, name="collector")
    cli.add_typer(service.app, name="service")
    cli.add_typer(eval.app, name="eval")
    cli.command("gate")(gate.gate)
    cli.add_typer(cases.app, name="cases")
    cli.add_typer(dashboard.app, name="dashboard")
    cli.add_typer(model.app, name="model")
    cli.add_typer(kb.app, name="kb")
    cli.add_typer(prices.app, name="prices")
    cli.add_typer(keys.app, name="keys")
    cli.command("demo")(demo.demo)
    return cli


def main() -> None:
    """Entry point of the console script: a user mistake is one line on stderr and exit code 2."""
    try:
        create_cli()(standalone_mode=True)
    except EvallensError as error:
        typer.echo(f"evallens: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        typer.echo("evallens: interrupted", err=True)
        sys.exit(130)
