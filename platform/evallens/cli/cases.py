"""``evallens cases``: production traces into eval sets."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="Mine bad production traces and promote them into eval sets.", no_args_is_help=True)


@app.command("mine")
def mine() -> None:
    """List candidate bad cases from production traffic."""
    not_built("cases mine")


@app.command("promote")
def promote() -> None:
    """Promote traces into an eval set as needs-review cases."""
    not_built("cases promote")
