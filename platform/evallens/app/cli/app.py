"""Builds the Typer app from one module per command group and turns user errors into one line."""

import signal
import sys
from typing import NoReturn

import typer

from evallens.app.cli import (
    cases,
    collector,
    dashboard,
    db,
    demo,
    eval,
    gate,
    kb,
    keys,
    model,
    prices,
    service,
)
from evallens.app.cli._errors import WORDED_ERRORS, one_line, shown
from evallens.signals import exit_on_signal

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


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
    """Entry point of the console script: a user mistake is one line on stderr and exit code 2.

    SIGTERM (systemd, `docker stop`, `kill`) unwinds every command as Ctrl-C does, so what it started
    (the embedded PostgreSQL, child processes) is stopped; the exit status is 143."""
    signal.signal(signal.SIGTERM, exit_on_signal)
    check_arguments(sys.argv[1:])
    try:
        result = create_cli()(standalone_mode=False)
    except typer.TyperException as error:  # click's errors: unknown command, bad or missing option
        usage_problem(error)
    except WORDED_ERRORS as error:
        fail(one_line(error))
    except (KeyboardInterrupt, typer.Abort):
        interrupted()
    if result == EXIT_INTERRUPTED:  # typer turns Ctrl-C in a command into Exit(130), returned here
        interrupted()
    if isinstance(result, int):  # typer.Exit(code) comes back as the code
        sys.exit(result)


def check_arguments(arguments: list[str]) -> None:
    """Python reads an argument's bytes that are not UTF-8 as lone surrogates (``\\udcff``), which no
    database, report or terminal can write: refuse them before any work."""
    for argument in arguments:
        try:
            argument.encode()
        except UnicodeEncodeError:
            fail(f"the argument {shown(argument)} is not UTF-8 text (a terminal in another encoding?)")


def interrupted() -> NoReturn:
    """Ctrl-C: one line, and the status a shell reports for SIGINT."""
    typer.echo("evallens: interrupted", err=True)
    sys.exit(EXIT_INTERRUPTED)


def usage_problem(error: typer.TyperException) -> NoReturn:
    """A command line click refused, in one line (``evallens`` alone shows the help)."""
    context = getattr(error, "ctx", None)
    if type(error).__name__ == "NoArgsIsHelpError" and context is not None:
        typer.echo(context.get_help())
        sys.exit(0)
    format_message = getattr(error, "format_message", None)
    message = format_message() if callable(format_message) else str(error)
    where = context.command_path if context is not None else "evallens"
    fail(f"{where}: {message} (see `{where} --help`)")


def fail(message: str) -> NoReturn:
    """Print one line on stderr and exit 2."""
    typer.echo(f"evallens: error: {message}", err=True)
    sys.exit(EXIT_ERROR)
