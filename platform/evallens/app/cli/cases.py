"""``evallens cases``: mine bad production traces, promote them into eval sets, review them."""

import json
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Mine bad production traces and promote them into eval sets.", no_args_is_help=True)
ExpectedOption = Literal["answer", "decline", "refuse"]
SET_HELP = "Eval set name (its latest version)."


@app.command("mine")
def mine(
    since: Annotated[str, typer.Option(help="Window: 30m, 24h, 7d, 2w.")] = "7d",
    limit: Annotated[int, typer.Option(min=1, help="Most candidates listed.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """List candidate bad cases from production traffic (never eval runs), worst first."""
    from evals.cases.commands import mine_command

    report = mine_command(since, limit)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    from evals.cases.render import print_candidates

    print_candidates(report, Console(width=200))


@app.command("promote")
def promote(
    trace_ids: Annotated[list[str], typer.Argument(metavar="TRACE_ID...", help="Traces to promote.")],
    eval_set: Annotated[str, typer.Option("--set", help=SET_HELP)],
    scenario: Annotated[str, typer.Option(help="Scenario of the new cases.")],
    expected: Annotated[ExpectedOption, typer.Option(help="Expected behaviour.")] = "answer",
    reference: Annotated[str | None, typer.Option(help="Reference answer (for --expected answer).")] = None,
) -> None:
    """Promote traces into a new set version (redacted; needs review unless complete)."""
    from evals.cases.commands import promote_command

    report = promote_command(trace_ids, eval_set, scenario, expected, reference)
    console = Console(width=200)
    console.print(
        f"{report.eval_set_name}: version {report.version} with {len(report.cases)} promoted case(s)"
    )
    for case in report.cases:
        kinds = ", ".join(r.kind for r in case.question.redactions) or "nothing"
        # user text and [brackets] are data, not rich markup
        console.print(
            f"  {case.case_key} [{case.status}] {case.question.text!r} (redacted: {kinds})", markup=False
        )


@app.command("review")
def review(
    case_keys: Annotated[list[str], typer.Argument(metavar="CASE_KEY...", help="Needs-review cases.")],
    eval_set: Annotated[str, typer.Option("--set", help=SET_HELP)],
    reference: Annotated[str | None, typer.Option(help="Reference answer.")] = None,
    expected: Annotated[ExpectedOption | None, typer.Option(help="Expected behaviour.")] = None,
    facts: Annotated[list[str] | None, typer.Option("--fact", help="A required fact (repeatable).")] = None,
    context_ids: Annotated[list[str] | None, typer.Option("--context-id", help="Reference doc id.")] = None,
    question: Annotated[str | None, typer.Option(help="Replace the (redacted) question.")] = None,
    reject: Annotated[bool, typer.Option(help="Reject instead: never replayed, never mined again.")] = False,
) -> None:
    """Complete (or reject) needs-review cases; a new set version holds them."""
    from evallens.cases import CaseReview
    from evals.cases.commands import review_command

    decision = CaseReview(reference, expected, facts or [], context_ids or [], question, None, reject)
    report = review_command(case_keys, eval_set, decision)
    console = Console(width=200)
    console.print(f"{report.eval_set_name}: version {report.version}", markup=False)
    for key, status in report.statuses.items():
        console.print(f"  {key}: {status}", markup=False)


@app.command("list")
def list_cases(
    eval_set: Annotated[str, typer.Option("--set", help=SET_HELP)],
    status: Annotated[
        str | None, typer.Option(help="Only this status: active, needs_review, rejected.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """List the cases of a set's latest version, with status and source trace."""
    from evals.cases.commands import list_command

    rows = list_command(eval_set, status)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("case", "status", "scenario", "trace", "question")
    for row in rows:
        table.add_row(*(str(row[key] or "") for key in ("case_key", "status", "scenario", "source_trace_id")),
                      str(row["question"] or "")[:80])  # fmt: skip
    Console(width=200).print(table)
