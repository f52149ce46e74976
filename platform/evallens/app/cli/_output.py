"""How list-like commands print: a table that never cuts cell text, or JSON with ``--format json``."""

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

# Piped output (CI logs, `| cat`, `| grep`) has no width to fit: lay tables out as wide as their text.
PIPED_WIDTH = 100_000


class OutputFormat(StrEnum):
    """What a list-like command prints."""

    TABLE = "table"
    JSON = "json"


FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", help="table (whole values, also when piped) or json.", case_sensitive=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="The same as --format json.")]


def chosen_format(fmt: OutputFormat, as_json: bool) -> OutputFormat:
    """``--json`` is a short form of ``--format json``."""
    return OutputFormat.JSON if as_json else fmt


def output_console(*, stderr: bool = False) -> Console:
    """A console that lays text out for a terminal's width, or without any width limit when piped."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=PIPED_WIDTH, soft_wrap=True)


def print_table(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Rows under ``headers``; on a terminal long cells fold onto more lines, never end in '…'."""
    table = Table(*headers)
    for column in table.columns:
        column.overflow = "fold"
    for row in rows:
        table.add_row(*(Text(value) for value in row))  # cell text is data, never rich markup
    console.print(table)


def print_json(rows: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> None:
    """JSON on stdout (datetimes as ISO 8601, UUIDs as strings)."""
    typer.echo(orjson.dumps(rows, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


def cell(value: object) -> str:
    """Text of a table cell: empty for a missing value."""
    return "" if value is None else str(value)
