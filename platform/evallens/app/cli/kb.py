"""``evallens kb``: manage the reference service's knowledge base."""

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="The reference service's knowledge base.", no_args_is_help=True)

DEFAULT_SERVICE_URL = "http://127.0.0.1:8000"


@app.command("load")
def load(
    path: Annotated[
        Path, typer.Argument(help="A folder of Markdown documents (or one file); id = file stem.")
    ],
    url: Annotated[
        str, typer.Option("--url", help="Base URL of the reference service.")
    ] = DEFAULT_SERVICE_URL,
) -> None:
    """Upsert every document into the service (only changed chunks are re-embedded)."""
    from rich.progress import track

    from evallens.service.documents.loader import load_corpus, read_corpus

    total = len(read_corpus(path))
    progress = iter(track(range(total), description="Loading documents"))

    def advance(_: str) -> None:
        next(progress, None)

    report = load_corpus(path, url, on_document=advance)
    next(progress, None)  # let the bar finish
    typer.echo(
        f"{len(report.created)} created, {len(report.updated)} updated, {len(report.unchanged)} unchanged;"
        f" {report.num_chunks_embedded} chunks embedded"
    )
