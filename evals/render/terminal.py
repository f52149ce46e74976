"""The comparison as rich tables for a terminal."""

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from evallens.reports import GateReportBody
from evallens.runs import left_out_notes
from evals.render._figures import (
    cache_line,
    cache_warning,
    detectable,
    infra_rows,
    number,
    points,
    power_note,
    power_summary,
    underpowered,
    verdict_word,
)

COLUMNS = (
    "scenario", "metric", "baseline", "candidate", "delta (pts)", "n", "worse/better", "test",
    "p", "p adj", "detects >= (pts)", "verdict",
)  # fmt: skip
MAX_POWER_NOTES = 8


def print_report(body: GateReportBody, console: Console) -> None:
    """Quality deltas, infra deltas, caches, power, hints and the verdict."""
    quality = Table(
        title=(
            f"{body.eval_set_name}: baseline {body.baseline_run_id[:8]} "
            f"vs candidate {body.candidate_run_id[:8]}"
        )
    )
    for column in COLUMNS:
        quality.add_column(column)
    for c in body.comparisons:
        style = "bold red" if c.regression else None
        quality.add_row(
            c.scenario, c.metric, f"{c.baseline:.3f}", f"{c.candidate:.3f}", points(c.delta),
            str(c.num_pairs), f"{c.num_worse}/{c.num_better}", c.test, f"{c.p_value:.4f}",
            f"{c.p_adjusted:.4f}", detectable(c), verdict_word(c), style=style,
        )  # fmt: skip
    console.print(quality)
    rows = infra_rows(body.infra_baseline, body.infra_candidate)
    if rows:
        infra = Table(title="serving metrics in each run's window")
        for column in ("figure", "baseline", "candidate", "delta"):
            infra.add_column(column)
        for row in rows:
            infra.add_row(*row)
        console.print(infra)
    _print_caches_and_power(body, console)
    for hint in body.hints:
        numbers = ", ".join(f"{k}={number(v)}" for k, v in hint.evidence.items())
        console.print(
            f"[yellow]hint:[/yellow] {escape(hint.message)}" + (f" [dim]({numbers})[/dim]" if numbers else "")
        )
    colour = "red" if body.verdict == "regression" else "green"
    console.print(
        f"[bold {colour}]verdict: {body.verdict}[/bold {colour}] "
        f"(alpha {body.alpha}, min effect {body.min_effect * 100:.0f} points, {body.procedure} procedure)"
    )


def _print_caches_and_power(body: GateReportBody, console: Console) -> None:
    for label, counts in (("baseline", body.cache_baseline), ("candidate", body.cache_candidate)):
        line = cache_line(label, counts)
        if line is not None:
            console.print(f"cache: {escape(line)}")
    warning = cache_warning(body)
    if warning is not None:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
    for label, note in left_out_notes(body):
        console.print(f"[yellow]{label}:[/yellow] {escape(note)}")
    if body.repeats_baseline > 1 or body.repeats_candidate > 1:
        console.print(
            f"repeats: {body.repeats_baseline} (baseline), {body.repeats_candidate} (candidate), "
            "averaged per case: tests count cases, not repeats"
        )
    summary = power_summary(body)
    if summary is not None:
        console.print(f"power: {summary} ('!' in the table):")
        weak = underpowered(body)
        for cell in weak[:MAX_POWER_NOTES]:
            console.print(f"  {escape(power_note(cell, body.min_effect))}")
        if len(weak) > MAX_POWER_NOTES:
            console.print(f"  ... and {len(weak) - MAX_POWER_NOTES} more (gate.md lists them all)")
