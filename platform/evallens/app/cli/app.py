"""Builds the Typer app from one module per command group and turns user errors into one line."""

import signal
import sys
from typing import NoReturn

import psycopg
import typer
from pydantic import ValidationError
from sqlalchemy.exc import InterfaceError, OperationalError

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
from evallens.errors import EvallensError
from evallens.settings import ENV_PREFIX
from evallens.signals import exit_on_signal

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
    """Entry point of the console script: a user mistake is one line on stderr and exit code 2.

    SIGTERM (systemd, `docker stop`, `kill`) unwinds every command as Ctrl-C does, so what it started
    (the embedded PostgreSQL, child processes) is stopped; the exit status is 143."""
    signal.signal(signal.SIGTERM, exit_on_signal)
    try:
        result = create_cli()(standalone_mode=False)
    except typer.TyperException as error:  # click's errors: unknown command, bad or missing option
        usage_problem(error)
    except EvallensError as error:
        fail(str(error))
    except ValidationError as error:
        fail(setting_problem(error))
    except (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError) as error:
        fail(database_problem(error))
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("evallens: interrupted", err=True)
        sys.exit(130)
    if isinstance(result, int):  # typer.Exit(code) comes back as the code
        sys.exit(result)


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


def database_problem(error: Exception) -> str:
    """What the database driver said, on one line: the server went away mid-command, or refused what
    the command asked (a value over one of PostgreSQL's limits is an OperationalError too)."""
    cause = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    said = lines[0] if lines else type(cause).__name__
    sqlstate = getattr(cause, "sqlstate", None)
    # no SQLSTATE: the connection failed in the client; 08: connection exception; 57P: the server stopped
    if sqlstate is None or sqlstate.startswith(("08", "57P")):
        return f"lost the database: {said}"
    return f"the database refused it (SQLSTATE {sqlstate}): {said}"


def setting_problem(error: ValidationError) -> str:
    """A settings class refused the environment: which variable, what is wrong, what it held."""
    problem = error.errors()[0]
    field = ".".join(str(part) for part in problem["loc"])
    name = f"{ENV_PREFIX}{field.upper()}" if error.title.endswith("Settings") else field
    shown = repr(problem.get("input"))
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{name}: {problem['msg']} (got {shown})"
