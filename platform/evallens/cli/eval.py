"""``evallens eval``: replay eval sets, compare runs, re-run on every config change."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="Replay eval sets against an endpoint and compare runs.", no_args_is_help=True)


@app.command("run")
def run() -> None:
    """Replay an eval set once."""
    not_built("eval run")


@app.command("compare")
def compare() -> None:
    """Compare two runs with paired statistics."""
    not_built("eval compare")


@app.command("watch")
def watch() -> None:
    """Replay whenever the target's config fingerprint changes."""
    not_built("eval watch")
