"""``evallens eval``: sync eval sets, replay them, compare runs, tag baselines, re-run on config changes."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

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
from evallens.app.progress import stderr_progress
from evallens.runs import MAIN_TAG
from evallens.settings.evals import MAX_WAIT_S

if TYPE_CHECKING:
    from evals.runner.run import RunReport

PROJECT_NOTE = "Sets, runs and tags belong to the project EVALLENS_CASES_PROJECT (default: default)."
app = typer.Typer(
    help=f"Replay eval sets against an endpoint and compare runs. {PROJECT_NOTE}", no_args_is_help=True
)
sets_app = typer.Typer(
    help=f"Eval-set files: validate and store versions. {PROJECT_NOTE}", no_args_is_help=True
)
app.add_typer(sets_app, name="sets")

# PostgreSQL's LIMIT is a bigint: a larger --limit is refused as click refuses 0.
MAX_LIMIT = 2**63 - 1
# Each replay of each case is one task held in memory at once; beyond this a run is a mistake.
MAX_REPEATS = 100
ENDPOINT_HELP = "OpenAI-compatible target (default: EVALLENS_EVAL_ENDPOINT)."
NO_CACHE_HELP = (
    "Send `Cache-Control: no-cache` so the target answers without its response caches (the reference "
    "service honours it): a model-only comparison. Default: caches on, as in production."
)


@sets_app.command("sync")
def sync(
    path: Annotated[Path, typer.Argument(help="A set file or a folder of *.yaml/*.yml/*.jsonl files.")],
    docs: Annotated[
        Path | None, typer.Option(help="Folder of <doc-id>.md files to check reference ids against.")
    ] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="Check reference ids against this target's /v1/documents.")
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print each set's version as JSON (for scripts: replay `pinned`, the file's own cases).",
        ),
    ] = False,
) -> None:
    """Validate set files and store a new version of each set whose content changed.

    A file whose content an older version already holds (a reverted file, or another branch synced
    since) maps to that version, and `eval run --set NAME` replays the latest one: replay NAME@VERSION,
    as printed, to replay exactly the file's cases."""
    from evals.commands import sync_command

    report = sync_command(path, docs, endpoint)
    if as_json:
        print_json({
            "sets": [
                {
                    "name": item.name, "version": item.version, "pinned": item.pinned,
                    "created": item.created, "num_cases": item.num_cases,
                    "content_hash": item.content_hash, "latest_version": item.latest_version,
                }
                for item in report.sets
            ],
            "checked_against": report.checked_against,
        })  # fmt: skip
        return
    console = Console(highlight=False)
    for item in report.sets:
        state = "new version" if item.created else "unchanged"
        console.print(f"{item.name}: version {item.version} ({state}, {item.num_cases} cases)", markup=False)
        if item.latest_version != item.version:
            console.print(
                f"  not the latest: `eval run --set {item.name}` replays version {item.latest_version}; "
                f"replay this file's cases with --set {item.pinned}",
                markup=False,
            )
    console.print(f"reference context ids checked against {report.checked_against}", markup=False)


@sets_app.command("export")
def export(
    eval_set: Annotated[str, typer.Argument(metavar="NAME[@VERSION]", help="Stored set version.")],
    out: Annotated[Path, typer.Option(dir_okay=False, help="File to write.")],
    fmt: Annotated[Literal["yaml", "jsonl"], typer.Option("--format", help="File format.")] = "yaml",
) -> None:
    """Write a stored set version (its active cases) back to a YAML or JSONL set file."""
    from evals.commands import export_command

    report = export_command(eval_set, fmt, out)
    left_out = f", {report.num_left_out} not active left out" if report.num_left_out else ""
    Console().print(
        f"{report.eval_set_name} v{report.version}: {report.num_cases} cases -> {report.path}{left_out}"
    )


@app.command("run")
def run(
    eval_set: Annotated[
        str, typer.Option("--set", help="Stored set: NAME (latest version) or NAME@VERSION.")
    ],
    endpoint: Annotated[str | None, typer.Option(help=ENDPOINT_HELP)] = None,
    repeats: Annotated[int, typer.Option(min=1, max=MAX_REPEATS, help="Replays per case.")] = 1,
    label: Annotated[str | None, typer.Option(help="A label stored with the run.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)] = False,
    tag: Annotated[
        str | None, typer.Option(help="Tag the completed run (e.g. main), as `eval tag` does.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run id, set and summary as JSON (for scripts).")
    ] = False,
) -> None:
    """Replay an eval set once and store the run."""
    from evals.commands import run_command

    report = run_command(
        eval_set, endpoint, repeats, label, no_cache=no_cache, tag=tag, progress=stderr_progress()
    )
    if as_json:
        print_json({
            "run_id": str(report.run_id), "eval_set": report.eval_set_name,
            "version": report.eval_set_version, "endpoint": report.endpoint,
            "config_fingerprint": report.config_fingerprint, "tag": tag,
            "summary": report.summary.model_dump(mode="json"),
        })  # fmt: skip
        return
    print_run(report, tag, output_console())


def print_run(report: "RunReport", tag: str | None, console: Console) -> None:
    """The run's id, its metrics with confidence intervals, failures and cache hits."""
    tagged = f", tagged {tag}" if tag else ""
    console.print(
        f"run {report.run_id}: {report.eval_set_name} v{report.eval_set_version} against "
        f"{report.endpoint}{tagged}", markup=False,
    )  # fmt: skip
    for metric, estimate in report.summary.overall.items():
        console.print(
            f"  {metric}: {estimate.mean:.3f} [{estimate.ci_low:.3f}, {estimate.ci_high:.3f}] n={estimate.n}",
            markup=False,
        )
    console.print(f"  cases {report.summary.num_cases}, failed requests {report.summary.num_errors}")
    if report.summary.num_unscored:
        unscored = ", ".join(
            f"{metric} {count}" for metric, count in sorted(report.summary.num_unscored.items())
        )
        console.print(f"  left unscored by the judge (excluded): {unscored}")
    cache = report.summary.cache
    if cache is not None:
        bypassed = " (caches bypassed)" if cache.bypassed else ""
        console.print(
            f"  answers from caches: {cache.num_exact_hits} exact, {cache.num_semantic_hits} semantic "
            f"of {cache.num_answers}{bypassed}"
        )


@app.command("runs")
def runs(
    eval_set: Annotated[str | None, typer.Option("--set", help="Only runs of this set.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="Most runs listed, newest first.")] = 20,
    fmt: FormatOption = OutputFormat.TABLE,
    as_json: JsonOption = False,
) -> None:
    """List the newest stored runs with their set, tags and status."""
    from evallens.db.sessions import open_sessions
    from evallens.runs import list_runs
    from evals.commands import configured_project

    with open_sessions() as sessions, sessions() as session:
        listed = list_runs(session, project=configured_project(), eval_set_name=eval_set, limit=limit)
    if chosen_format(fmt, as_json) is OutputFormat.JSON:
        print_json([item.model_dump(mode="json") for item in listed])
        return
    headers = ["run", "set", "label", "tags", "status", "started (UTC)", "cases", "failed", "endpoint"]
    rows = [
        [str(item.run_id), f"{item.eval_set}@{item.version}", cell(item.label), ", ".join(item.tags),
         item.status if item.error is None else f"{item.status}: {item.error}",
         f"{item.started_at:%Y-%m-%d %H:%M:%S}", cell(item.num_cases), cell(item.num_errors), item.endpoint]
        for item in listed
    ]  # fmt: skip
    print_table(output_console(), headers, rows)


@app.command("compare")
def compare(
    baseline: Annotated[str, typer.Argument(help="Baseline run id or tag.")],
    candidate: Annotated[str, typer.Argument(help="Candidate run id or tag.")],
    report_dir: Annotated[
        Path | None, typer.Option(file_okay=False, help="Also write gate.md, gate.xml and gate.json here.")
    ] = None,
) -> None:
    """Compare two runs with paired statistics, infra deltas and hints."""
    from evals.commands import compare_command

    compare_command(baseline, candidate, report_dir, output_console())


@app.command("tag")
def tag(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id.")],
    name: Annotated[str, typer.Argument(help="Tag name, e.g. main.")],
) -> None:
    """Name a completed run (e.g. ``main``) so the gate can use it as a baseline."""
    from evals.commands import tag_command

    Console().print(f"tag {name} -> run {tag_command(run_id, name)}")


@app.command("watch")
def watch(
    eval_sets: Annotated[list[str], typer.Option("--set", help="Stored set(s) to replay on every change.")],
    endpoint: Annotated[str | None, typer.Option(help=ENDPOINT_HELP)] = None,
    baseline: Annotated[str, typer.Option(help="Gate every run against this run id or tag.")] = MAIN_TAG,
    interval: Annotated[
        float | None,
        typer.Option(
            min=0.1, max=MAX_WAIT_S, help="Seconds between polls (default: EVALLENS_EVAL_WATCH_INTERVAL_S)."
        ),
    ] = None,
    settle: Annotated[
        float,
        typer.Option(
            min=0, max=MAX_WAIT_S, help="Seconds a new fingerprint must stay unchanged before a replay."
        ),
    ] = 5.0,
    ready_url: Annotated[
        str | None, typer.Option(help="Readiness probe (any 2xx = ready); default: the target's /readyz.")
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option(dir_okay=False, help="Watch this file's content instead of /v1/config.")
    ] = None,
    max_polls: Annotated[int | None, typer.Option(min=1, help="Stop after this many polls.")] = None,
    max_runs: Annotated[int | None, typer.Option(min=1, help="Stop after this many replays.")] = None,
    report_dir: Annotated[
        Path | None,
        typer.Option(file_okay=False, help="Write each gate's gate.md/.xml/.json under DIR/<set>-<run>/."),
    ] = None,
    exit_on_regression: Annotated[
        bool, typer.Option("--exit-on-regression", help="Stop with exit code 1 on the first regression.")
    ] = False,
    on_regression: Annotated[
        str | None,
        typer.Option(
            help="On a regression: POST the verdict to this http(s) URL, or run this shell command."
        ),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)] = False,
    repeats: Annotated[int, typer.Option(min=1, max=MAX_REPEATS, help="Replays per case.")] = 1,
) -> None:
    """Wait for a ready target; replay and gate whenever its config fingerprint changes."""
    from evallens.settings import EvalSettings
    from evals.commands import configured_project, watch_command
    from evals.watch import WatchOptions

    settings = EvalSettings()
    options = WatchOptions(
        endpoint=endpoint or settings.eval_endpoint, set_selectors=tuple(eval_sets), baseline=baseline,
        interval_s=interval if interval is not None else settings.eval_watch_interval_s, settle_s=settle,
        ready_url=ready_url, config_file=config_file, max_polls=max_polls, max_runs=max_runs,
        report_dir=report_dir, exit_on_regression=exit_on_regression, on_regression=on_regression,
        no_cache=no_cache, repeats=repeats, project=configured_project(),
    )  # fmt: skip
    console = output_console()
    outcome = watch_command(options, console)
    console.print(
        f"watch ended: {len(outcome.runs)} run(s) completed, {len(outcome.failures)} failed, "
        f"{sum(g.body.verdict == 'regression' for g in outcome.gates)} of {len(outcome.gates)} gate(s) "
        "found a regression",
        markup=False,
    )
    raise typer.Exit(outcome.exit_code)


@app.command("calibrate")
def calibrate(
    labels: Annotated[
        Path, typer.Argument(metavar="LABELS.jsonl", help="Hand-labelled answers (docs/calibration.md).")
    ],
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    report_dir: Annotated[
        Path | None,
        typer.Option(file_okay=False, help="Also write calibration.json and calibration.md here."),
    ] = None,
    suggest_thresholds: Annotated[
        bool, typer.Option("--suggest-thresholds", help="Propose thresholds by 5-fold cross-validation.")
    ] = False,
) -> None:
    """How well accuracy, irrelevance and harmfulness agree with hand labels (Cohen's kappa)."""
    import json

    from evals.calibrate import calibrate as run_calibration
    from evals.calibrate import print_calibration, write_calibration
    from evals.render import check_report_dir

    if report_dir is not None:  # before the scoring, which takes minutes on a large file
        check_report_dir(report_dir)
    report = run_calibration(labels, suggest=suggest_thresholds, progress=stderr_progress())
    if report_dir is not None:
        write_calibration(report, report_dir)
    if json_output:
        typer.echo(json.dumps(report.as_json()))
    else:
        print_calibration(report, output_console())
