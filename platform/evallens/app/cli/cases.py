"""``evallens cases``: mine bad production traces, promote them into eval sets, review them."""

from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console

from evallens import cases
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
from evallens.app.progress import stderr_progress
from evallens.db.sessions import open_sessions
from evallens.durations import parse_duration
from evallens.settings import CasesSettings

if TYPE_CHECKING:
    from evallens.cases.mining import MiningReport

app = typer.Typer(help="Mine bad production traces and promote them into eval sets.", no_args_is_help=True)
ExpectedOption = Literal["answer", "decline", "refuse"]
StatusOption = Literal["active", "needs_review", "rejected"]
SET_HELP = "Eval set name (its latest version)."


@app.command("mine")
def mine(
    since: Annotated[str, typer.Option(help="Window: 30m, 24h, 7d, 2w.")] = "7d",
    limit: Annotated[int, typer.Option(min=1, help="Most candidates listed.")] = 20,
    fmt: FormatOption = OutputFormat.TABLE,
    as_json: JsonOption = False,
) -> None:
    """List candidate bad cases from production traffic (never eval runs), worst first."""
    from evallens.cases.mining import mine_cases
    from evals.readers import mining_readers

    window = parse_duration(since, option="--since")
    settings = CasesSettings()
    with open_sessions() as sessions, sessions() as session:
        report = mine_cases(
            session, settings, mining_readers(), project=settings.cases_project, since=window,
            limit=limit, progress=stderr_progress(),
        )  # fmt: skip
        session.commit()  # the questions' new embeddings: the next mine reads them instead
    if chosen_format(fmt, as_json) is OutputFormat.JSON:
        typer.echo(report.model_dump_json(indent=2))
        return
    print_candidates(report, output_console())


def print_candidates(report: "MiningReport", console: Console) -> None:
    """The candidates as a table, then one line of totals (the demo prints the same)."""
    rows = [
        [item.trace_id, str(item.count), f"{item.score:.2f}", ", ".join(item.reasons),
         item.question or "(no question)"]
        for item in report.candidates
    ]  # fmt: skip
    print_table(console, ["trace", "count", "score", "reasons", "question (redacted)"], rows)
    console.print(
        f"{report.num_traces} production traces since {report.since:%Y-%m-%d %H:%M} UTC, "
        f"{report.num_flagged} flagged, {report.num_already_in_sets} already in a set, "
        f"{len(report.candidates)} candidates"
    )


@app.command("promote")
def promote(
    trace_ids: Annotated[list[str], typer.Argument(metavar="TRACE_ID...", help="Traces to promote.")],
    eval_set: Annotated[str, typer.Option("--set", help=SET_HELP)],
    scenario: Annotated[str, typer.Option(help="Scenario of the new cases.")],
    expected: Annotated[ExpectedOption, typer.Option(help="Expected behaviour.")] = "answer",
    reference: Annotated[str | None, typer.Option(help="Reference answer (for --expected answer).")] = None,
) -> None:
    """Promote traces into a new set version (redacted; needs review unless complete)."""
    with open_sessions() as sessions, sessions.begin() as session:
        report = cases.promote_traces(
            session, trace_ids, eval_set_name=eval_set, scenario=scenario, expected=expected,
            reference_answer=reference, project=CasesSettings().cases_project,
        )  # fmt: skip
    console = output_console()
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
    decision = cases.CaseReview(reference, expected, facts or [], context_ids or [], question, None, reject)
    project = CasesSettings().cases_project
    with open_sessions() as sessions, sessions.begin() as session:
        report = cases.review_cases(session, case_keys, decision, eval_set_name=eval_set, project=project)
    console = output_console()
    console.print(f"{report.eval_set_name}: version {report.version}", markup=False)
    for key, status in report.statuses.items():
        console.print(f"  {key}: {status}", markup=False)


@app.command("list")
def list_cases(
    eval_set: Annotated[str, typer.Option("--set", help=SET_HELP)],
    status: Annotated[StatusOption | None, typer.Option(help="Only the cases with this status.")] = None,
    fmt: FormatOption = OutputFormat.TABLE,
    as_json: JsonOption = False,
) -> None:
    """List the cases of a set's latest version, with status and source trace."""
    with open_sessions() as sessions, sessions() as session:
        latest = cases.latest_eval_set(session, eval_set, CasesSettings().cases_project)
        rows = [
            {
                "version": latest.version, "case_key": case.case_key, "status": case.status,
                "scenario": case.scenario, "expected": case.expected_behavior,
                "source_trace_id": case.source_trace_id, "question": case.question,
                "redactions": [r["kind"] for r in case.redactions or []],
            }
            for case in cases.set_cases(session, latest.id)
            if status is None or case.status == status
        ]  # fmt: skip
    if chosen_format(fmt, as_json) is OutputFormat.JSON:
        print_json(rows)
        return
    keys = ("case_key", "status", "scenario", "source_trace_id", "question")
    table = [[cell(row[key]) for key in keys] for row in rows]
    print_table(output_console(), ["case", "status", "scenario", "trace", "question"], table)
