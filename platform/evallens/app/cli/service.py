"""``evallens service``: the reference LLM/RAG service."""

import typer
from rich.console import Console

app = typer.Typer(help="The reference service: vLLM + RAG behind an OpenAI-compatible API.")


@app.callback(invoke_without_command=True)
def run(
    ctx: typer.Context,
    insecure: bool = typer.Option(
        False, "--insecure", help="Listen beyond loopback WITHOUT authentication (not recommended)."
    ),
) -> None:
    """Run the reference service (EVALLENS_SERVICE_HOST/PORT, default 127.0.0.1:8000)."""
    if ctx.invoked_subcommand is not None:
        return
    from evallens.service.server import run_service
    from evallens.settings import ServiceSettings

    report = run_service(ServiceSettings(), insecure)
    Console(soft_wrap=True).print(f"service at {report.url} ({report.engine}: {report.model}) stopped")


@app.command("config")
def config() -> None:
    """Print what GET /v1/config would answer, without starting the service.

    The configuration and fingerprint `evallens service` would run with under the current EVALLENS_*
    settings, as JSON; nothing is started and no model is loaded. CI can tell from the fingerprint
    whether a change needs an eval replay before starting anything.
    """
    from evallens.service.server import describe_service
    from evallens.settings import ServiceSettings

    typer.echo(describe_service(ServiceSettings()).model_dump_json(indent=2))
