"""``evallens prices``: the model price table used for cost tags."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="Model prices for cost tagging.", no_args_is_help=True)


@app.command("list")
def list_prices() -> None:
    """List the model prices in force."""
    not_built("prices list")


@app.command("set")
def set_price() -> None:
    """Set a model's price."""
    not_built("prices set")
