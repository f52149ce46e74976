"""``evallens kb``: manage the reference service's knowledge base."""

from pathlib import Path
from typing import Annotated

import typer

from evallens.settings import EvalSettings, ServiceAddressSettings

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
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="Key for a service with auth; documents go to its project (default: EVALLENS_EVAL_API_KEY).",
        ),
    ] = None,
) -> None:
    """Upsert every document into the service (only changed chunks are re-embedded)."""
    from evallens.app.progress import stderr_progress
    from evallens.service.documents.loader import load_corpus

    # The eval commands' key by default: a loaded corpus lands in the project that evals then ask.
    key = api_key or EvalSettings().eval_api_key
    report = load_corpus(
        path, url or ServiceAddressSettings().service_url, api_key=key, progress=stderr_progress()
    )
    typer.echo(
        f"{len(report.created)} created, {len(report.updated)} updated, {len(report.unchanged)} unchanged;"
        f" {report.num_chunks_embedded} chunks embedded"
    )
