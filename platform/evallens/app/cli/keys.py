"""``evallens keys``: projects and API keys."""

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console
from sqlalchemy.orm import Session

from evallens.app.cli._output import (
    FormatOption,
    JsonOption,
    OutputFormat,
    chosen_format,
    output_console,
    print_json,
    print_table,
)
from evallens.auth import Scope, create_key, list_keys, revoke_key
from evallens.db.sessions import open_sessions

app = typer.Typer(help="Project-scoped API keys.", no_args_is_help=True)


@contextlib.contextmanager
def _transaction() -> Iterator[Session]:
    with open_sessions() as sessions, sessions.begin() as session:
        yield session


@app.command("create")
def create(
    project: str = typer.Option(..., "--project", help="Project (tenant) the key writes and reads."),
    scope: Annotated[
        Scope,
        typer.Option(
            "--scope", help="ingest (spans, service), read, write (read + promote/review cases), or admin."
        ),
    ] = Scope.INGEST,
) -> None:
    """Create a key for a project and print it once."""
    with _transaction() as session:
        created = create_key(session, project, scope)
    typer.echo(created.key)
    Console(stderr=True).print(
        f"{scope} key {created.info.prefix} for project {project!r}: store it now, it is not shown again"
    )


@app.command("list")
def list_command(
    project: str | None = typer.Option(None, "--project", help="Only this project."),
    fmt: FormatOption = OutputFormat.TABLE,
    as_json: JsonOption = False,
) -> None:
    """List keys by prefix, scope and last use."""
    with _transaction() as session:
        keys = list_keys(session, project)
    if chosen_format(fmt, as_json) is OutputFormat.JSON:
        print_json([
            {"prefix": key.prefix, "project": key.project, "scope": str(key.scope),
             "created_at": key.created_at, "last_used_at": key.last_used_at, "revoked_at": key.revoked_at}
            for key in keys
        ])  # fmt: skip
        return
    rows = [
        [key.prefix, key.project, str(key.scope), _when(key.created_at), _when(key.last_used_at),
         _when(key.revoked_at)]
        for key in keys
    ]  # fmt: skip
    print_table(output_console(), ["prefix", "project", "scope", "created", "last used", "revoked"], rows)


@app.command("revoke")
def revoke(prefix: str = typer.Argument(..., help="The key's prefix as `keys list` shows it.")) -> None:
    """Revoke a key."""
    with _transaction() as session:
        info = revoke_key(session, prefix)
    Console().print(f"revoked key {info.prefix} of project {info.project!r} at {_when(info.revoked_at)}")


def _when(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S %Z")
