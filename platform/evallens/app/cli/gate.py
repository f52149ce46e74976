"""``evallens gate``: the CI gate (exit 0 pass, 1 regression, 2 error)."""

from pathlib import Path
from typing import Annotated

import typer

from evallens.app.cli._errors import WORDED_ERRORS
from evallens.app.cli._output import output_console, print_json
from evallens.app.progress import stderr_progress
from evallens.errors import EvallensError


def gate(
    baseline: Annotated[str, typer.Option(help="Baseline run id or tag (e.g. main).")],
    candidate: Annotated[str | None, typer.Option(help="Candidate run id or tag.")] = None,
    candidate_endpoint: Annotated[
        str | None,
        typer.Option(help="Replay the baseline's set version against this endpoint now and gate that run."),
    ] = None,
    report_dir: Annotated[
        Path | None, typer.Option(file_okay=False, help="Write gate.md, gate.xml (JUnit) and gate.json here.")
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="With --candidate-endpoint: replay with `Cache-Control: no-cache` (model only).",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the verdict, run ids and report paths as JSON on stdout (the report goes to stderr).",
        ),
    ] = False,
) -> None:
    """Compare a candidate run against a baseline and fail on significant regressions.

    Both runs, and the gate report, belong to the project EVALLENS_CASES_PROJECT (default: default).
    """
    if (candidate is None) == (candidate_endpoint is None):
        raise EvallensError("give exactly one of --candidate or --candidate-endpoint")
    if no_cache and candidate_endpoint is None:
        raise EvallensError("--no-cache applies to a replay: use it with --candidate-endpoint")
    from evals.commands import gate_command
    from evals.render import REPORT_FILES

    console = output_console(stderr=as_json)
    try:
        outcome = gate_command(
            baseline, candidate, candidate_endpoint, report_dir, console, no_cache=no_cache,
            progress=stderr_progress(),
        )  # fmt: skip
    except WORDED_ERRORS:  # main() words these in one line (a setting: the variable and its value)
        raise
    except Exception as error:  # exit code 1 means "regression"; a crash must be 2, never 1
        first_line = next(iter(str(error).splitlines()), "")
        raise EvallensError(f"gate failed: {type(error).__name__}: {first_line}") from error
    if as_json:
        body = outcome.body
        reports = {kind: str(report_dir / name) for kind, name in REPORT_FILES.items()} if report_dir else {}
        print_json({
            "verdict": body.verdict, "exit_code": outcome.exit_code, "eval_set": body.eval_set_name,
            "baseline_run_id": body.baseline_run_id, "candidate_run_id": body.candidate_run_id,
            "gate_report_id": outcome.gate_report_id, "num_hints": len(body.hints), "reports": reports,
        })  # fmt: skip
    raise typer.Exit(outcome.exit_code)
