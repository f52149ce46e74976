"""Terminal rendering of a mining report."""

from rich.console import Console
from rich.table import Table

from evals.cases.mine import MiningReport


def print_candidates(report: MiningReport, console: Console) -> None:
    """The candidates as a table, then one line of totals."""
    table = Table("trace", "count", "score", "reasons", "question (redacted)")
    for item in report.candidates:
        table.add_row(item.trace_id, str(item.count), f"{item.score:.2f}", ", ".join(item.reasons),
                      (item.question or "(no question)")[:90])  # fmt: skip
    console.print(table)
    console.print(
        f"{report.num_traces} production traces since {report.since:%Y-%m-%d %H:%M} UTC, "
        f"{report.num_flagged} flagged, {report.num_already_in_sets} already in a set, "
        f"{len(report.candidates)} candidates"
    )
