"""Tables never cut cell text: folded on a terminal, whole on one line when piped."""

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import typer
from rich.console import Console

from evallens.app.cli._output import PIPED_WIDTH, OutputFormat, print_table
from evallens.app.cli.app import create_cli
from evallens.app.cli.cases import print_candidates
from evallens.cases.mining import Candidate, MiningReport

QUESTION = (
    "I ordered the TR-4410 backpack in [red] three weeks ago, paid with a gift card and a credit card, "
    "and the tracking page has said 'label created' ever since: where is it and can I cancel it?"
)


def candidates_report() -> MiningReport:
    candidate = Candidate(
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736", trace_ids=["4bf92f3577b34da6a3ce929d0e0e4736"],
        count=3, score=2.5, reasons=["negative feedback", "declined"], question=QUESTION, answer=None,
        feedback_score=-1.0, feedback_comment=None, latency_ms=900.0, cost_usd=None,
        start_time=datetime(2026, 1, 2, tzinfo=UTC),
    )  # fmt: skip
    return MiningReport(
        since=datetime(2026, 1, 1, tzinfo=UTC), num_traces=10, num_flagged=3, num_already_in_sets=0,
        candidates=[candidate],
    )  # fmt: skip


def test_piped_tables_keep_every_cell_whole_on_one_line() -> None:
    out = io.StringIO()
    print_candidates(candidates_report(), Console(file=out, width=PIPED_WIDTH, soft_wrap=True))
    row = next(line for line in out.getvalue().splitlines() if "4bf92f35" in line)
    assert QUESTION in row and "4bf92f3577b34da6a3ce929d0e0e4736" in row
    assert "…" not in out.getvalue()


def test_a_narrow_terminal_folds_long_cells_instead_of_cutting_them() -> None:
    out = io.StringIO()
    console = Console(file=out, width=60, force_terminal=True, color_system=None)
    print_table(console, ["model", "provider"], [["HuggingFaceTB/SmolLM2-135M-Instruct", "self-hosted"]])
    text = out.getvalue()
    assert "…" not in text
    joined = "".join(line.strip("│ ┃") for line in text.splitlines())
    assert "self-hosted" in joined and "SmolLM2-135M-Instruct" in joined


def _commands(command: Any, path: str = "evallens") -> Iterator[tuple[str, Any]]:
    """Every command under ``command`` (typer's own click), by its full name."""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")
    if not hasattr(command, "commands"):
        yield path, command


def test_every_command_that_prints_json_takes_json() -> None:
    """``eval runs`` and ``keys list`` took ``--format json`` but not the ``--json`` of every other
    command with JSON output."""
    commands = dict(_commands(typer.main.get_command(create_cli())))
    with_format = {
        path for path, command in commands.items()
        for option in command.params if isinstance(option.default, OutputFormat)
    }  # fmt: skip
    assert {"evallens eval runs", "evallens keys list", "evallens prices list"} <= with_format
    without_json = [
        path for path in sorted(with_format)
        if not any("--json" in option.opts for option in commands[path].params)
    ]  # fmt: skip
    assert without_json == []
