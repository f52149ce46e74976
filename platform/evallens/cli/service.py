"""``evallens service``: the reference LLM/RAG service."""

import typer

from evallens.cli._common import not_built

app = typer.Typer(help="The reference service: vLLM + RAG behind an OpenAI-compatible API.")


@app.callback(invoke_without_command=True)
def run(ctx: typer.Context) -> None:
    """Run the reference service on 127.0.0.1:8000."""
    if ctx.invoked_subcommand is None:
        not_built("service")
