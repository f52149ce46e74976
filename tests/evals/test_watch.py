"""``eval watch`` against a scripted target whose readiness, config and answers change between polls."""

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalRun, GateReport
from evallens.reports import GateReportBody
from evallens.runs import tag_run
from evallens.settings import EvalSettings
from evals.errors import EvalSetError, ReportNotWritten
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.context import build_scoring_context
from evals.metrics.result import ScoringContext
from evals.runner.run import run_eval
from evals.sets.format import CaseSpec, EvalSetSpec
from evals.sets.store import find_set_version, sync_set
from evals.watch import WatchOptions, WatchOutcome, watch
from evals.watch.notify import notify_regression
from tests.evals.conftest import ScriptedTarget, run_cli
from tests.evals.metrics.judge_server import faulty_judge

NUM_CASES = 20
SET_NAME = "watch-set"


def _sync_recall_set(sessions: sessionmaker[Session], target: ScriptedTarget, name: str = SET_NAME) -> None:
    """A set whose recall the scripted target controls through the ids it cites."""
    cases = [
        CaseSpec(
            id=f"w-{i:03d}",
            scenario="returns_refunds" if i % 2 else "shipping_logistics",
            question=f"Which document covers topic {i}?",
            reference_answer=f"Document {i} covers topic {i}.",
            reference_context_ids=[f"doc-{i}"],
        )
        for i in range(NUM_CASES)
    ]
    with sessions.begin() as session:
        sync_set(session, EvalSetSpec(name=name, source_path="memory", cases=cases))
    target.retrieved = {case.question or "": [f"doc-{i}"] for i, case in enumerate(cases)}


def _run_watch(
    sessions: sessionmaker[Session],
    similarity: MiniLmSimilarity,
    options: WatchOptions,
    between_polls: Callable[[int], None],
) -> tuple[WatchOutcome, list[str]]:
    events: list[str] = []
    polls = [0]

    def sleep(seconds: float) -> None:
        if seconds == options.interval_s:  # the settle wait (a different length) is not a new poll
            polls[0] += 1
            between_polls(polls[0])

    settings = EvalSettings(eval_endpoint=options.endpoint, eval_concurrency=4)
    outcome = watch(
        sessions,
        settings,
        ScoringContext(similarity=similarity),
        options,
        on_event=events.append,
        sleep=sleep,
    )
    return outcome, events


def test_watch_waits_for_readiness_replays_each_change_once_gates_and_retries_failed_runs(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    _sync_recall_set(sessions, scripted_target)
    target = scripted_target
    target.ready = False
    good_citations = dict(target.retrieved)

    def between_polls(poll: int) -> None:
        if poll == 1:
            target.ready = True
        elif poll == 2:  # the first run becomes the baseline
            with sessions.begin() as session:
                run = session.scalars(select(EvalRun)).one()
                tag_run(session, str(run.id), "main")
        elif poll == 3:  # a restart with no change: down, then up with the same config
            target.ready = False
        elif poll == 4:
            target.ready = True
        elif poll == 5:  # a change that loses every citation
            target.config = {"fingerprint": "cfg-2", "model": "scripted"}
            target.retrieved = {}
        elif poll == 6:  # a change deployed while the target errors on every request
            target.config = {"fingerprint": "cfg-3", "model": "scripted"}
            target.retrieved, target.fail_all = good_citations, True
        elif poll == 7:
            target.fail_all = False

    options = WatchOptions(
        endpoint=target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0, max_polls=8,
        on_regression=f"{target.url}/hook",
    )  # fmt: skip
    outcome, events = _run_watch(sessions, similarity, options, between_polls)

    assert [r.config_fingerprint for r in outcome.runs] == ["cfg-1", "cfg-2", "cfg-3"]
    (failure,) = outcome.failures
    assert f"{NUM_CASES} of {NUM_CASES} requests failed" in failure and "HTTP 500" in failure
    assert [g.body.verdict for g in outcome.gates] == ["regression", "pass"]
    assert outcome.exit_code == 0
    with sessions() as session:
        statuses = sorted((r.config_fingerprint, r.status) for r in session.scalars(select(EvalRun)))
        gated = [str(g.candidate_run_id) for g in session.scalars(select(GateReport))]
    assert statuses == [
        ("cfg-1", "completed"),
        ("cfg-2", "completed"),
        ("cfg-3", "completed"),
        ("cfg-3", "failed"),
    ]
    assert sorted(gated) == sorted(str(r.run_id) for r in outcome.runs[1:])

    assert sum(e.startswith("waiting: target not ready") for e in events) == 2  # once per outage
    assert sum("nothing to replay" in e for e in events) == 1
    assert any(e.startswith("not gated: no run or tag 'main'") for e in events)
    assert any("regression: overall recall 1.000 -> 0.000" in e for e in events)
    assert any("not counted as an evaluation" in e for e in events)
    assert any(e == f"webhook {target.url} answered 204" for e in events)
    (hook,) = target.hooks
    assert hook["verdict"] == "regression" and hook["candidate_run_id"] == str(outcome.runs[1].run_id)
    assert {(r["scenario"], r["metric"]) for r in hook["regressions"]} >= {("overall", "recall")}


def test_watch_exits_on_regression_and_runs_the_command(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tmp_path: Path,
) -> None:
    _sync_recall_set(sessions, scripted_target)
    target = scripted_target

    def between_polls(poll: int) -> None:
        if poll == 1:
            with sessions.begin() as session:
                tag_run(session, str(session.scalars(select(EvalRun.id)).one()), "main")
            target.config = {"fingerprint": "cfg-2", "model": "scripted"}
            target.retrieved = {}

    hook_file = tmp_path / "hook.txt"
    options = WatchOptions(
        endpoint=target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0, max_polls=10,
        exit_on_regression=True, report_dir=tmp_path / "reports",
        on_regression=f'echo "$EVALLENS_GATE_VERDICT $EVALLENS_GATE_REGRESSIONS" > {hook_file}',
    )  # fmt: skip
    outcome, events = _run_watch(sessions, similarity, options, between_polls)
    assert outcome.exit_code == 1 and len(outcome.runs) == 2  # stopped at the regression, poll 2 of 10
    assert hook_file.read_text().startswith("regression overall/recall")
    report_dir = tmp_path / "reports" / f"{SET_NAME}-{str(outcome.runs[1].run_id)[:8]}"
    assert {p.name for p in report_dir.iterdir()} == {"gate.md", "gate.xml", "gate.json"}
    assert any(e.startswith("on-regression command exited 0") for e in events)


def test_a_report_that_cannot_be_written_stores_no_verdict(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tmp_path: Path,
) -> None:
    """The report folder, checked when the watch started, became a file before the first gate: the
    watch stops with that error, and stores no verdict without its reports."""
    _sync_recall_set(sessions, scripted_target)
    reports = tmp_path / "reports"

    def between_polls(poll: int) -> None:
        if poll == 1:
            with sessions.begin() as session:
                tag_run(session, str(session.scalars(select(EvalRun.id)).one()), "main")
            scripted_target.config = {"fingerprint": "cfg-2", "model": "scripted"}
            reports.write_text("")

    options = WatchOptions(
        endpoint=scripted_target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0, max_polls=2,
        report_dir=reports,
    )  # fmt: skip
    with pytest.raises(ReportNotWritten, match=f"cannot write reports into {reports}/{SET_NAME}-"):
        _run_watch(sessions, similarity, options, between_polls)
    with sessions() as session:
        assert session.scalars(select(GateReport)).first() is None
        assert len(session.scalars(select(EvalRun)).all()) == 2  # the candidate run was made


def test_reports_stay_in_the_report_dir_whatever_the_set_is_named(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tmp_path: Path,
) -> None:
    name = "../../escaped"
    _sync_recall_set(sessions, scripted_target, name)

    def between_polls(poll: int) -> None:
        if poll == 1:
            with sessions.begin() as session:
                tag_run(session, str(session.scalars(select(EvalRun.id)).one()), "main")
            scripted_target.config = {"fingerprint": "cfg-2", "model": "scripted"}

    reports = tmp_path / "a" / "b" / "reports"
    options = WatchOptions(
        endpoint=scripted_target.url, set_selectors=(name,), interval_s=0.01, settle_s=0.0, max_polls=2,
        report_dir=reports,
    )  # fmt: skip
    outcome, _ = _run_watch(sessions, similarity, options, between_polls)
    assert [g.body.verdict for g in outcome.gates] == ["pass"]
    [written] = reports.iterdir()
    assert written.name == f"______escaped-{str(outcome.runs[1].run_id)[:8]}"
    assert not (tmp_path / "a" / f"escaped-{str(outcome.runs[1].run_id)[:8]}").exists()


def test_a_baseline_scored_by_other_metrics_is_not_gated_against_and_the_watch_goes_on(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    _sync_recall_set(sessions, scripted_target)
    target = scripted_target

    def between_polls(poll: int) -> None:
        if poll == 1:  # the baseline was stored by an older evallens, before runs recorded their scoring
            with sessions.begin() as session:
                run = session.scalars(select(EvalRun)).one()
                run.scoring = None
                tag_run(session, str(run.id), "main")
            target.config = {"fingerprint": "cfg-2", "model": "scripted"}
        elif poll == 2:
            target.config = {"fingerprint": "cfg-3", "model": "scripted"}

    options = WatchOptions(
        endpoint=target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0, max_polls=3,
        exit_on_regression=True,
    )  # fmt: skip
    outcome, events = _run_watch(sessions, similarity, options, between_polls)
    assert [r.config_fingerprint for r in outcome.runs] == ["cfg-1", "cfg-2", "cfg-3"]  # went on
    assert outcome.gates == [] and outcome.exit_code == 0
    refused = [e for e in events if e.startswith("not gated: run ")]
    assert len(refused) == 2 and all(
        "was stored before runs recorded how they were scored" in e for e in refused
    )


def test_a_change_evaluated_without_the_watch_is_gated_not_replayed(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    """A person replayed the new config by hand (`eval run`, no gate), then started the watch."""
    _sync_recall_set(sessions, scripted_target)
    target = scripted_target
    settings, context = EvalSettings(eval_concurrency=4), ScoringContext(similarity=similarity)
    with sessions() as session:
        set_id = find_set_version(session, SET_NAME).id
    baseline = run_eval(sessions, set_id, settings, context, endpoint=target.url, label="main")
    with sessions.begin() as session:
        tag_run(session, str(baseline.run_id), "main")
    good_citations = dict(target.retrieved)
    target.config, target.retrieved = {"fingerprint": "cfg-2", "model": "scripted"}, {}
    by_hand = run_eval(sessions, set_id, settings, context, endpoint=target.url, label="by hand")
    target.config, target.retrieved = {"fingerprint": "cfg-1", "model": "scripted"}, good_citations

    def between_polls(poll: int) -> None:
        if poll == 1:  # the change the person evaluated by hand is deployed
            target.config, target.retrieved = {"fingerprint": "cfg-2", "model": "scripted"}, {}

    options = WatchOptions(
        endpoint=target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0, max_polls=2,
        exit_on_regression=True,
    )  # fmt: skip
    outcome, events = _run_watch(sessions, similarity, options, between_polls)
    assert outcome.runs == []  # both configs already evaluated: nothing replayed
    assert [(g.body.candidate_run_id, g.body.verdict) for g in outcome.gates] == [
        (str(by_hand.run_id), "regression")  # the baseline itself is not gated against itself
    ]
    assert outcome.exit_code == 1
    assert sum("not replaying" in e for e in events) == 2


def test_watch_waits_while_the_config_is_still_changing(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    _sync_recall_set(sessions, scripted_target)
    target = scripted_target
    settle_calls = [0]
    events: list[str] = []

    def sleep(seconds: float) -> None:
        if seconds == 0.5:
            settle_calls[0] += 1
            if settle_calls[0] == 1:  # a second change lands while the first one settles
                target.config = {"fingerprint": "cfg-2", "model": "scripted"}

    options = WatchOptions(
        endpoint=target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.5, max_polls=3
    )
    settings = EvalSettings(eval_endpoint=target.url)
    outcome = watch(
        sessions,
        settings,
        ScoringContext(similarity=similarity),
        options,
        on_event=events.append,
        sleep=sleep,
    )
    assert [r.config_fingerprint for r in outcome.runs] == ["cfg-2"]
    assert "waiting: config still changing (cfg-1 -> cfg-2)" in events


def test_watch_cli_rejects_an_unknown_set_and_runs_against_a_target(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    missing = run_cli(
        "eval", "watch", "--set", "nosuch", "--endpoint", scripted_target.url, database_url=database_url
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "evallens: error: no stored eval set 'nosuch': run `evallens eval sets sync PATH` first"
    ]
    _sync_recall_set(sessions, scripted_target)
    ran = run_cli(
        "eval", "watch", "--set", SET_NAME, "--endpoint", scripted_target.url, "--max-polls", "1",
        "--settle", "0", database_url=database_url,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "replaying against" in ran.stdout and "not gated" in ran.stdout
    assert "watch ended: 1 run(s) completed, 0 failed, 0 of 0 gate(s) found a regression" in ran.stdout


def test_watch_cli_refuses_a_bad_webhook_url_without_showing_its_secret(
    database_url: str, scripted_target: ScriptedTarget
) -> None:
    """Before: the line quoted the URL with its path and query, where a Slack or Teams webhook's secret is."""
    webhook = "https://bot:s3cret@hooks.example:notaport/services/T0/B0/s3cret?sig=s3cret"
    result = run_cli(
        "eval", "watch", "--set", SET_NAME, "--endpoint", scripted_target.url, "--on-regression", webhook,
        database_url=database_url,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "evallens: error: --on-regression 'https://hooks.example:notaport' is not a valid URL: "
        "Invalid port: 'notaport'"
    ]


@pytest.mark.parametrize("flag", ["--interval", "--max-runs"])
def test_watch_cli_rejects_bad_limits(database_url: str, flag: str) -> None:
    result = run_cli("eval", "watch", "--set", SET_NAME, flag, "0", database_url=database_url)
    assert result.returncode == 2 and "Invalid value" in result.stderr


def test_a_change_is_not_replayed_while_the_judge_cannot_say_its_model(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    """Scored by a judge of unknown model, a run could be neither reused nor gated: the watch waits."""
    _sync_recall_set(sessions, scripted_target)
    target = scripted_target
    with faulty_judge() as judge:
        settings = EvalSettings(
            eval_endpoint=target.url,
            eval_concurrency=4,
            eval_judge_endpoint=judge.url,
            eval_judge_mode="both",
        )
        with sessions() as session:
            set_id = find_set_version(session, SET_NAME).id
        baseline = run_eval(sessions, set_id, settings, build_scoring_context(settings, similarity))
        with sessions.begin() as session:
            tag_run(session, str(baseline.run_id), "main")
        target.config = {"fingerprint": "cfg-2", "model": "scripted"}  # a change, deployed
        judge.models_down = 1_000_000  # while the judge restarts

        def sleep(seconds: float) -> None:
            if seconds == options.interval_s:  # after the first poll, the judge is back
                judge.models_down = 0

        events: list[str] = []
        options = WatchOptions(endpoint=target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0,
                               max_polls=3)  # fmt: skip
        scoring = build_scoring_context(settings, similarity)
        outcome = watch(sessions, settings, scoring, options, on_event=events.append, sleep=sleep)
    waiting = [e for e in events if e.startswith("waiting: judge endpoint answered HTTP 503")]
    assert len(waiting) == 1 and "EVALLENS_EVAL_JUDGE_MODEL" in waiting[0]
    assert [run.config_fingerprint for run in outcome.runs] == ["cfg-2"]  # replayed once the judge was back
    assert [gate.body.verdict for gate in outcome.gates] == ["pass"]


def test_a_config_file_missing_for_a_moment_is_waited_for_and_said_once(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tmp_path: Path,
) -> None:
    """An editor saving the watched file may remove it and write it anew: the watch goes on."""
    _sync_recall_set(sessions, scripted_target)
    config_file = tmp_path / "serve.yaml"
    config_file.write_text("model: scripted\n")

    def between_polls(poll: int) -> None:
        if poll == 1:
            config_file.unlink()
        elif poll == 3:
            config_file.write_text("model: scripted\n")

    options = WatchOptions(
        endpoint=scripted_target.url, set_selectors=(SET_NAME,), interval_s=0.01, settle_s=0.0,
        config_file=config_file, max_polls=4,
    )  # fmt: skip
    outcome, events = _run_watch(sessions, similarity, options, between_polls)

    assert len(outcome.runs) == 1 and outcome.exit_code == 0
    missing = [e for e in events if "cannot read the watched config file" in e]
    assert missing == [
        f"waiting: {config_file}: cannot read the watched config file: No such file or directory"
    ]
    assert sum("nothing to replay" in e for e in events) == 1


def test_a_mistyped_config_file_is_refused_before_the_first_poll(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tmp_path: Path,
) -> None:
    options = WatchOptions(
        endpoint=scripted_target.url, set_selectors=(SET_NAME,), config_file=tmp_path / "nosuch.yaml"
    )
    with pytest.raises(EvalSetError, match="cannot read the watched config file"):
        _run_watch(sessions, similarity, options, lambda _: None)


def test_a_set_named_twice_is_replayed_and_gated_once(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    _sync_recall_set(sessions, scripted_target)
    options = WatchOptions(
        endpoint=scripted_target.url, set_selectors=(SET_NAME, SET_NAME, f"{SET_NAME}@1"), interval_s=0.01,
        settle_s=0.0, max_polls=1,
    )  # fmt: skip
    outcome, events = _run_watch(sessions, similarity, options, lambda _: None)
    assert len(outcome.runs) == 1
    assert sum("replaying against" in e for e in events) == 1
    assert sum(e.startswith("not gated: no run or tag 'main'") for e in events) == 1
    assert not any("already evaluated" in e for e in events)


def test_hook_lines_show_no_secret_of_the_webhook_or_the_command(scripted_target: ScriptedTarget) -> None:
    """Before: the lines quoted the webhook's URL, whose path or query holds a Slack or Teams webhook's
    secret, and the command line, which may set or pass a token."""
    body = GateReportBody(
        verdict="regression", eval_set_name="s", baseline_run_id="b", candidate_run_id="c",
        min_effect=0.03, alpha=0.05, comparisons=[], infra_baseline=None, infra_candidate=None, hints=[],
        flipped_cases=[],
    )  # fmt: skip
    host = scripted_target.url.removeprefix("http://")
    secret_path = "/services/T0/B0/s3cret?sig=s3cret&token=s3cret"
    lines = [
        notify_regression(f"http://bot:s3cret@{host}{secret_path}", body, None),
        notify_regression(f"http://bot:s3cret@127.0.0.1:1{secret_path}", body, None),  # nothing listens
        notify_regression("SLACK_TOKEN=s3cret sh -c 'exit 3' --token s3cret -u bot:s3cret", body, None),
    ]
    assert lines == [
        f"webhook {scripted_target.url} answered 404",
        "webhook http://127.0.0.1:1 failed: ConnectError",
        "on-regression command exited 3: sh",
    ]
