"""``evallens model``: prepare model weights offline."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="Prepare model weights offline (no model hub).", no_args_is_help=True)


@app.command("pull")
def pull() -> None:
    """Prepare the default chat model and report where the embedding model is."""
    not_built("model pull")
