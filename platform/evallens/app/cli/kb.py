"""``evallens kb``: manage the reference service's knowledge base."""

from pathlib import Path
from typing import Annotated

import typer

from evallens.settings import ServiceAddressSettings

app = typer.Typer(help="The reference service's knowledge base.", no_args_is_help=True)


@app.command("load")
def load(
    path: Annotated[
        Path, typer.Argument(help="A folder of Markdown documents (or one file); id = file stem.")
    ],
    url: Annotated[
        str | None,
        typer.Option(
            "--url", help="Base URL of the reference service (default: EVALLENS_SERVICE_HOST/PORT)."
        ),
    ] = None,
) -> None:
    """Upsert every document into the service (only changed chunks are re-embedded)."""
    from evallens.app.progress import stderr_progress
    from evallens.service.documents.loader import load_corpus

    report = load_corpus(path, url or ServiceAddressSettings().service_url, progress=stderr_progress())
    typer.echo(
        f"{len(report.created)} created, {len(report.updated)} updated, {len(report.unchanged)} unchanged;"
        f" {report.num_chunks_embedded} chunks embedded"
    )
