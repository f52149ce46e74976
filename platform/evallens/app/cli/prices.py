"""``evallens prices``: the model price table used for cost tags."""

from datetime import datetime
from typing import Annotated

import typer
from rich.console import Console

from evallens.app.cli._output import (
    FormatOption,
    JsonOption,
    OutputFormat,
    cell,
    chosen_format,
    output_console,
    print_json,
    print_table,
)
from evallens.settings import DatabaseSettings

app = typer.Typer(help="Model prices for cost tagging.", no_args_is_help=True)


@app.command("list")
def list_prices(fmt: FormatOption = OutputFormat.TABLE, as_json: JsonOption = False) -> None:
    """List the model prices (the shipped defaults are added the first time)."""
    from collector.commands import price_table
    from collector.prices import price_as_dict

    rows = [price_as_dict(entry) for entry in price_table(DatabaseSettings())]
    if chosen_format(fmt, as_json) is OutputFormat.JSON:
        print_json(rows)
        return
    headers = ["model", "pattern", "provider", "in $/1M tok", "out $/1M tok", "$/GPU-hour"]
    headers += ["valid from", "valid to"]
    print_table(output_console(), headers, [[cell(value) for value in row.values()] for row in rows])


@app.command("set")
def set_price(
    model: Annotated[
        str,
        typer.Argument(
            help="Model name, matched in any case, without a provider prefix (openai/gpt-4o) and as "
            "the start of dated names (gpt-4o-2024-08-06)."
        ),
    ],
    input_usd: Annotated[float | None, typer.Option("--input", help="USD per 1M input tokens.")] = None,
    output_usd: Annotated[float | None, typer.Option("--output", help="USD per 1M output tokens.")] = None,
    gpu_hour_usd: Annotated[float | None, typer.Option("--gpu-hour", help="USD per GPU-hour.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", help="openai, self-hosted, ...")] = None,
    valid_from: Annotated[datetime | None, typer.Option("--valid-from", help="From when (UTC).")] = None,
    pattern: Annotated[
        str | None,
        typer.Option(
            "--pattern",
            help="Glob of other names this price covers, any case ('*smollm2-135m*', 'gpt-4o-20*').",
        ),
    ] = None,
) -> None:
    """Set (insert or replace) a model's price."""
    from collector.commands import price_entry, price_table

    entry = price_entry(
        model,
        input_usd_per_mtok=input_usd,
        output_usd_per_mtok=output_usd,
        gpu_hour_usd=gpu_hour_usd,
        provider=provider,
        valid_from=valid_from,
        pattern=pattern,
    )
    price_table(DatabaseSettings(), update=entry)
    Console().print(f"price of {model} set")
