"""The comparison as rich tables for a terminal."""

from rich.console import Console
from rich.table import Table

from evallens.reports import GateReportBody
from evals.reports._figures import infra_rows, number, points, verdict_word


def print_report(body: GateReportBody, console: Console) -> None:
    """Quality deltas, infra deltas, hints and the verdict."""
    quality = Table(
        title=(
            f"{body.eval_set_name}: baseline {body.baseline_run_id[:8]} "
            f"vs candidate {body.candidate_run_id[:8]}"
        )
    )
    for column in (
        "scenario",
        "metric",
        "baseline",
        "candidate",
        "delta (pts)",
        "n",
        "test",
        "p (Holm)",
        "verdict",
    ):
        quality.add_column(column)
    for c in body.comparisons:
        style = "bold red" if c.regression else None
        quality.add_row(
            c.scenario, c.metric, f"{c.baseline:.3f}", f"{c.candidate:.3f}", points(c.delta),
            str(c.num_pairs), c.test, f"{c.p_adjusted:.4f}", verdict_word(c), style=style,
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
    for hint in body.hints:
        numbers = ", ".join(f"{k}={number(v)}" for k, v in hint.evidence.items())
        console.print(
            f"[yellow]hint:[/yellow] {hint.message}" + (f" [dim]({numbers})[/dim]" if numbers else "")
        )
    colour = "red" if body.verdict == "regression" else "green"
    console.print(
        f"[bold {colour}]verdict: {body.verdict}[/bold {colour}] "
        f"(alpha {body.alpha}, min effect {body.min_effect * 100:.0f} points)"
    )
