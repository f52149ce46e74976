"""``evallens keys``: projects and API keys."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="Project-scoped API keys.", no_args_is_help=True)


@app.command("create")
def create() -> None:
    """Create a key for a project and print it once."""
    not_built("keys create")


@app.command("list")
def list_keys() -> None:
    """List keys by prefix, scope and last use."""
    not_built("keys list")


@app.command("revoke")
def revoke() -> None:
    """Revoke a key."""
    not_built("keys revoke")
