"""The runner against an OpenAI-compatible target: what it records, and how failures end."""

import dataclasses
import json
import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import func, make_url, select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalResult, EvalRun, EvalTag, JudgeVerdict
from evallens.db.server import DatabaseServer
from evallens.ports import free_port
from evallens.reports import InfraSummary, RunSummary
from evallens.settings import EvalSettings
from evallens.telemetry.attributes import HEADER_EVAL_CASE_ID, HEADER_EVAL_RUN_ID
from evals.errors import EndpointUnreachable, ScoredDifferently
from evals.gate import gate_endpoint
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.context import build_scoring_context, describe_scoring
from evals.metrics.result import ScoringContext
from evals.runner.run import run_eval
from evals.sets.sync import sync_path
from tests.evals.conftest import SETS, ScriptedTarget, run_cli, start_replay
from tests.evals.metrics.judge_server import faulty_judge

RR1 = "How many days do I have to return an unopened item?"
RR2 = "How long does a refund take to reach my card?"
OOS = "Who won the 1998 football World Cup?"


def _sync(sessions: sessionmaker[Session]) -> int:
    with sessions.begin() as session:
        return sync_path(session, SETS / "good").sets[0].eval_set_id


def test_a_run_records_answers_timings_citations_and_scores(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    eval_set_id = _sync(sessions)
    scripted_target.answers = {
        RR1: "You can return unopened items within 30 days of delivery for a full refund.",
        RR2: "Refunds usually arrive within 5 business days once we receive your return.",
        OOS: "France won the 1998 World Cup.",
    }
    scripted_target.retrieved = {RR1: ["returns-policy#0", "returns-policy#2"], RR2: ["shipping-rates#1"]}
    scripted_target.semantic_hits = {RR2}
    settings = EvalSettings(eval_endpoint=scripted_target.url + "/v1/", eval_concurrency=2)
    scoring = ScoringContext(similarity=similarity)
    report = run_eval(sessions, eval_set_id, settings, scoring)

    with sessions() as session:
        run = session.get_one(EvalRun, report.run_id)
        assert (run.status, run.config_fingerprint, run.config["model"]) == ("completed", "cfg-1", "scripted")
        assert run.scoring == describe_scoring(scoring)  # how it was scored, for gates and reuse to check
        results = {
            r.case_id: r for r in session.scalars(select(EvalResult).where(EvalResult.run_id == run.id))
        }
    assert len(results) == 4
    by_response = {r.response: r for r in results.values()}
    first = by_response[scripted_target.answers[RR1]]
    assert first.retrieved_ids == ["returns-policy"]
    assert first.scores == {"accuracy": 1.0, "irrelevance": 0.0, "harmfulness": 0.0, "recall": 1.0}
    assert first.ttft_ms is not None and first.latency_ms is not None and first.ttft_ms <= first.latency_ms
    assert (first.input_tokens, first.output_tokens, first.semantic_cache_hit) == (
        12,
        14,
        False,
    )  # 14 words in the scripted answer
    assert first.trace_id is not None and len(first.trace_id) == 32
    second = by_response[scripted_target.answers[RR2]]
    assert second.semantic_cache_hit is True and second.scores["recall"] == 0.0
    assert by_response[scripted_target.answers[OOS]].scores["irrelevance"] == 1.0

    summary = RunSummary.model_validate(run.summary)
    assert summary.num_cases == 4 and summary.num_errors == 0
    assert summary.scenarios["returns_refunds"]["recall"].mean == 0.5
    assert summary.overall["harmfulness"].mean == 0.0  # the default answer refuses the harmful request
    infra = InfraSummary.model_validate(run.infra)
    assert infra.num_requests == 4 and infra.semantic_cache_hit_rate == 0.25
    sent = {(h[HEADER_EVAL_RUN_ID], h[HEADER_EVAL_CASE_ID]) for h in scripted_target.headers_seen}
    assert sent == {(str(run.id), key) for key in ("rr-001", "rr-002", "oos-001", "h-001")}


def test_an_answer_with_nul_characters_is_stored(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    # a small model sampled at a temperature can emit any byte; PostgreSQL text refuses NUL
    eval_set_id = _sync(sessions)
    scripted_target.answers = {RR1: "Thirty\x00 days\x00"}
    settings = EvalSettings(eval_endpoint=scripted_target.url)
    report = run_eval(sessions, eval_set_id, settings, ScoringContext(similarity=similarity))
    with sessions() as session:
        run = session.get_one(EvalRun, report.run_id)
        responses = set(session.scalars(select(EvalResult.response).where(EvalResult.run_id == run.id)))
    assert run.status == "completed" and "Thirty\ufffd days\ufffd" in responses


def test_cited_ids_with_nul_characters_are_stored(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    eval_set_id = _sync(sessions)
    scripted_target.retrieved = {RR1: ["returns-policy\x00#0"]}  # sent as JSON's \u0000
    report = run_eval(
        sessions,
        eval_set_id,
        EvalSettings(eval_endpoint=scripted_target.url),
        ScoringContext(similarity=similarity),
    )
    with sessions() as session:
        cited = list(
            session.scalars(select(EvalResult.retrieved_ids).where(EvalResult.run_id == report.run_id))
        )
    assert ["returns-policy\ufffd"] in cited


GARBLED_ANSWERS = {
    "a number": ["5"],
    "null": ["null"],
    "choices as text": ['{"choices": "abc"}'],
    "a choice as a number": ['{"choices": [7]}'],
    "content as a number": ['{"choices": [{"delta": {"content": 5}}]}'],
    "a token count as text": ['{"choices": [], "usage": {"prompt_tokens": "many"}}'],
    "a token count past INTEGER": ['{"choices": [], "usage": {"completion_tokens": ' + "9" * 30 + "}}"],
    "a finish reason as a number": ['{"choices": [{"delta": {"content": "hi"}, "finish_reason": 2}]}'],
    "nested too deeply": ["[" * 100_000 + "]" * 100_000],
}


@pytest.mark.parametrize("garbled", list(GARBLED_ANSWERS))
def test_a_garbled_answer_is_a_recorded_failure(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    garbled: str,
) -> None:
    # what the target sends fails that one request, never the whole run with a traceback
    eval_set_id = _sync(sessions)
    scripted_target.raw_chunks = {RR1: GARBLED_ANSWERS[garbled]}
    settings = EvalSettings(eval_endpoint=scripted_target.url, eval_max_error_rate=0.3)
    report = run_eval(sessions, eval_set_id, settings, ScoringContext(similarity=similarity))
    with sessions() as session:
        run = session.get_one(EvalRun, report.run_id)
        errors = list(
            session.scalars(
                select(EvalResult.error).where(EvalResult.run_id == run.id, EvalResult.error.is_not(None))
            )
        )
    assert run.status == "completed" and report.summary.num_errors == 1
    assert len(errors) == 1 and (errors[0] or "").startswith("unreadable response: "), errors


@pytest.mark.parametrize("reason", ["abort", "error"])
def test_an_answer_the_target_ended_early_is_a_recorded_failure(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    reason: str,
) -> None:
    # vLLM ends a request it aborted (on shutdown, all in flight) with finish_reason "abort" and the text cut
    # where it stopped: an error of the target, never an answer scored as wrong
    eval_set_id = _sync(sessions)
    scripted_target.raw_chunks = {
        RR1: [
            json.dumps({"choices": [{"index": 0, "delta": {"content": "You can return items within"}}]}),
            json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
        ]
    }
    settings = EvalSettings(eval_endpoint=scripted_target.url, eval_max_error_rate=0.3)
    report = run_eval(sessions, eval_set_id, settings, ScoringContext(similarity=similarity))
    with sessions() as session:
        errors = list(
            session.scalars(
                select(EvalResult.error).where(
                    EvalResult.run_id == report.run_id, EvalResult.error.is_not(None)
                )
            )
        )
    assert report.summary.num_errors == 1
    assert errors == [f"the target ended the answer early (finish_reason '{reason}')"]


@pytest.mark.parametrize("number", ["NaN", "-Infinity", "1e999"])
def test_a_config_that_is_not_json_is_refused_before_any_run(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    number: str,
) -> None:
    # Python's json reads these; the JSONB column of the run refuses them
    eval_set_id = _sync(sessions)
    scripted_target.raw_config = f'{{"fingerprint": "cfg-1", "model": "scripted", "temperature": {number}}}'
    settings = EvalSettings(eval_endpoint=scripted_target.url)
    with pytest.raises(EndpointUnreachable, match="did not return a JSON object"):
        run_eval(sessions, eval_set_id, settings, ScoringContext(similarity=similarity))
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 0


def test_nul_characters_in_the_config_are_stored_as_replacements(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    eval_set_id = _sync(sessions)
    scripted_target.raw_config = (
        '{"fingerprint": "cfg\\u0000", "model": "scripted", "notes": {"k\\u0000": ["v\\u0000"]}}'
    )
    settings = EvalSettings(eval_endpoint=scripted_target.url)
    report = run_eval(sessions, eval_set_id, settings, ScoringContext(similarity=similarity))
    with sessions() as session:
        run = session.get_one(EvalRun, report.run_id)
    assert (run.status, run.config_fingerprint) == ("completed", "cfg\ufffd")
    assert run.config["notes"] == {"k\ufffd": ["v\ufffd"]}


def test_a_case_id_outside_ascii_is_sent_percent_encoded(
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tmp_path: Path,
) -> None:
    # HTTP header values are ASCII: the id as it is made every request fail before it was sent
    path = tmp_path / "umlaut.yaml"
    path.write_text(
        "set: umlaut\nscenario: s\ncases:\n  - id: rückgabe-1\n    question: Q?\n    expected: decline\n",
        encoding="utf-8",
    )
    with sessions.begin() as session:
        eval_set_id = sync_path(session, path).sets[0].eval_set_id
    settings = EvalSettings(eval_endpoint=scripted_target.url)
    report = run_eval(sessions, eval_set_id, settings, ScoringContext(similarity=similarity))
    assert report.summary.num_errors == 0
    assert [headers[HEADER_EVAL_CASE_ID] for headers in scripted_target.headers_seen] == ["r%C3%BCckgabe-1"]


def test_a_failed_request_is_a_recorded_failure(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    eval_set_id = _sync(sessions)
    scripted_target.failing = {RR1}
    # 2 of 8 requests fail: under a 30% limit the run completes and scores them as failures
    settings = EvalSettings(eval_endpoint=scripted_target.url, eval_max_error_rate=0.3)
    report = run_eval(
        sessions,
        eval_set_id,
        settings,
        ScoringContext(similarity=similarity),
        repeats=2,
    )
    assert report.summary.num_errors == 2
    with sessions() as session:
        failed = list(session.scalars(select(EvalResult).where(EvalResult.error.is_not(None))))
        run = session.get_one(EvalRun, report.run_id)
    assert run.status == "completed" and len(failed) == 2
    assert all(r.error.startswith("HTTP 500") and r.scores["accuracy"] == 0.0 for r in failed)  # type: ignore[union-attr]
    assert {r.repeat for r in failed} == {0, 1}


def test_a_run_with_too_many_failed_requests_is_stored_as_failed(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.failing = {RR1}  # 1 of 4 requests: 25%, over the default 10% limit
    result = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, database_url=database_url
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "failed: 1 of 4 requests failed (25%, over the 10% limit); first: HTTP 500" in line
    with sessions() as session:
        run = session.scalars(select(EvalRun)).one()
        num_results = session.scalar(select(func.count()).select_from(EvalResult))
    assert run.status == "failed" and run.error is not None and run.error.startswith("1 of 4 requests failed")
    assert run.summary is None and num_results == 0  # nothing half-written: the run says why it failed
    assert str(run.id) in line


def test_a_database_lost_mid_run_is_one_line_and_no_completed_run(
    database_url: str,
    postgres_server: DatabaseServer,
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
) -> None:
    """The database stops taking connections while the target answers: exit 2 and one line, never a
    traceback, and the run is not left as a completed one."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.answer_delay_s = 3.0
    run = start_replay(database_url, scripted_target.url)
    name = str(make_url(database_url).database)
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        while not scripted_target.headers_seen:  # the run is stored and replaying
            assert run.poll() is None, run.communicate()
            time.sleep(0.05)
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name)))
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
        _, stderr = run.communicate(timeout=300)
        admin.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name)))
    assert run.returncode == 2, stderr
    # the replay's progress prints a status line every few seconds off a terminal (a loaded CI machine
    # reaches one): the error is the last line, and the only one that is not progress
    *progress, line = stderr.strip().splitlines()
    assert not any(part.startswith(("evallens: error", "Traceback")) for part in progress), stderr
    assert line.startswith("evallens: error: lost the database: connection failed: ")
    assert line.endswith(f'database "{name}" is not currently accepting connections')
    with sessions() as session:
        stored = session.scalars(select(EvalRun)).one()
        assert stored.status != "completed" and stored.summary is None
        assert session.scalar(select(func.count()).select_from(EvalResult)) == 0


def wait_for_a_question(target: ScriptedTarget, run: subprocess.Popen[str]) -> None:
    """Until the replay ``run`` asked ``target`` its first question (it is stored and replaying)."""
    deadline = time.monotonic() + 120
    while not target.headers_seen:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never asked the target"
        time.sleep(0.05)


def test_a_run_stopped_mid_replay_is_stored_as_interrupted(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    """SIGTERM (docker stop, a CI timeout) while the target answers: the run says it was interrupted,
    and is never a completed run a later gate would read."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.answer_delay_s = 3.0
    run = start_replay(database_url, scripted_target.url)
    wait_for_a_question(scripted_target, run)
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=300)
    assert run.returncode == 143
    with sessions() as session:
        stored = session.scalars(select(EvalRun)).one()
        assert (stored.status, stored.error) == ("failed", "interrupted (SIGTERM)")
        assert session.scalar(select(func.count()).select_from(EvalResult)) == 0


def test_ctrl_c_again_while_the_interruption_is_recorded_still_records_it(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    """Ctrl-C pressed twice: the second came while the first was being written as the run's failure,
    stopped that write, and the run stayed 'running' forever. The run's row is locked here so that the
    failure write waits, and the second signal surely lands in it."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.answer_delay_s = 3.0
    run = start_replay(database_url, scripted_target.url)
    wait_for_a_question(scripted_target, run)
    url = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    # pg_stat_activity is read once per transaction: the watcher reads it outside the holder's
    with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as watcher:
        holder.execute("SELECT id FROM eval_runs FOR UPDATE")
        run.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 120
        while not watcher.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
            "AND query LIKE 'UPDATE eval_runs%'"
        ).fetchone():
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "the failure write never waited on the row lock"
            time.sleep(0.05)
        run.send_signal(signal.SIGINT)
        time.sleep(0.5)  # let the signal reach the waiting write (no timing is asserted)
    _, stderr = run.communicate(timeout=300)
    assert run.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "evallens: interrupted"
    with sessions() as session:
        stored = session.scalars(select(EvalRun)).one()
        assert (stored.status, stored.error) == ("failed", "interrupted (SIGINT)")


def test_no_cache_sends_the_header_and_the_run_counts_cached_answers(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.semantic_hits = {RR1, RR2}
    cached = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, database_url=database_url
    )
    assert cached.returncode == 0, cached.stderr
    assert "answers from caches: 0 exact, 2 semantic of 4" in cached.stdout
    assert not any("cache-control" in headers for headers in scripted_target.headers_seen)
    scripted_target.headers_seen.clear()
    bypassed = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, "--no-cache",
        database_url=database_url,
    )  # fmt: skip
    assert bypassed.returncode == 0, bypassed.stderr
    assert [h.get("cache-control") for h in scripted_target.headers_seen] == ["no-cache"] * 4
    assert "(caches bypassed)" in bypassed.stdout
    with sessions() as session:
        summaries = [RunSummary.model_validate(r.summary) for r in session.scalars(select(EvalRun))]
    counts = sorted((s.cache.bypassed, s.cache.num_semantic_hits) for s in summaries if s.cache is not None)
    assert counts == [(False, 2), (True, 2)]  # the scripted target ignores the header; the report says so


@pytest.mark.parametrize("timeout_s", ["inf", "1e12"])
def test_a_judge_timeout_no_socket_takes_is_one_line_exit_2_and_no_run(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget, timeout_s: str
) -> None:
    """The judge's client sets its timeout on a socket, which refuses infinity and anything past
    ``time_t``: an OverflowError traceback ended the run command."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    judge = {
        "EVALLENS_EVAL_JUDGE_ENDPOINT": f"http://127.0.0.1:{free_port()}",
        "EVALLENS_EVAL_JUDGE_TIMEOUT_S": timeout_s,
    }
    result = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url,
        database_url=database_url, extra_env=judge,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        "evallens: error: EVALLENS_EVAL_JUDGE_TIMEOUT_S: Input should be less than or equal to 604800 "
        f"(got '{timeout_s}')"
    )
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 0


def test_an_unreachable_endpoint_is_one_line_exit_2_and_no_run(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    sync = run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url)
    assert sync.returncode == 0, sync.stderr
    dead = f"http://127.0.0.1:{free_port()}"
    result = run_cli("eval", "run", "--set", "mini-support", "--endpoint", dead, database_url=database_url)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"evallens: error: cannot reach the target at {dead}")
    gate = run_cli("gate", "--baseline", "main", "--candidate-endpoint", dead, database_url=database_url)
    assert gate.returncode == 2 and len(gate.stderr.strip().splitlines()) == 1
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 0


@pytest.mark.parametrize("url", ["http://localhost:port", "http://[::1"])
def test_a_url_with_no_port_number_is_one_line_exit_2(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path, url: str
) -> None:
    """A placeholder port left in a command, or an unclosed IPv6 bracket: httpx refuses the URL
    before any request, with no HTTP error, so each command said so with a traceback."""
    (tmp_path / "set.jsonl").write_text((SETS / "good" / "harmful.jsonl").read_text())
    sync = run_cli("eval", "sets", "sync", str(tmp_path / "set.jsonl"), database_url=database_url)
    assert sync.returncode == 0, sync.stderr
    commands: dict[str, list[tuple[str, ...]]] = {
        "the target": [
            ("eval", "run", "--set", "mini-support", "--endpoint", url),
            ("eval", "watch", "--set", "mini-support", "--endpoint", url, "--max-polls", "1"),
        ],
        "--ready-url": [("eval", "watch", "--set", "mini-support", "--ready-url", url, "--max-polls", "1")],
        "--endpoint": [("eval", "sets", "sync", str(tmp_path / "set.jsonl"), "--endpoint", url)],
    }
    for what, lines in commands.items():
        for command in lines:
            result = run_cli(*command, database_url=database_url)
            assert result.returncode == 2, result.stderr
            [line] = result.stderr.strip().splitlines()
            assert line.startswith(f"evallens: error: {what} '{url}' is not a valid URL: Invalid port: "), (
                line
            )
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 0


def test_a_replay_through_the_cli_asks_the_judge_only_about_answers_it_has_not_judged(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    """``eval run``, ``gate --candidate-endpoint`` and ``eval watch`` built their judge without the
    database, so only ``calibrate`` read the verdict cache: every replay of unchanged answers paid the
    judge again for each case."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    with faulty_judge() as judge:
        env = {"EVALLENS_EVAL_JUDGE_ENDPOINT": judge.url, "EVALLENS_EVAL_JUDGE_MODE": "judge"}
        first = run_cli(
            "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, "--tag", "main",
            database_url=database_url, extra_env=env,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        asked = len(judge.requests)
        assert asked > 0
        gate = run_cli(
            "gate", "--baseline", "main", "--candidate-endpoint", scripted_target.url,
            database_url=database_url, extra_env=env,
        )  # fmt: skip
        assert gate.returncode == 0, gate.stderr
    assert len(judge.requests) == asked  # the same answers: every verdict came from PostgreSQL
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 2
        assert set(session.scalars(select(JudgeVerdict.project))) == {"default"}


def test_cli_run_then_tag(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.answers = {
        RR1: "Unopened items can be returned within 30 days of delivery for a full refund."
    }
    result = run_cli(
        "eval", "run", "--set", "mini-support@1", "--endpoint", scripted_target.url, database_url=database_url
    )
    assert result.returncode == 0, result.stderr
    run_id = result.stdout.split()[1].rstrip(":")
    assert "accuracy" in result.stdout and "failed requests 0" in result.stdout
    tagged = run_cli("eval", "tag", run_id, "main", database_url=database_url)
    assert tagged.returncode == 0 and run_id in tagged.stdout
    with sessions() as session:
        assert session.scalars(select(EvalRun.status)).all() == ["completed"]
    # --json, as every other command with JSON output takes it (and --format json, as before)
    listed = [
        run_cli("eval", "runs", *flags, database_url=database_url)
        for flags in (["--json"], ["--format", "json"])
    ]
    assert [item.returncode for item in listed] == [0, 0], listed[0].stderr
    assert listed[0].stdout == listed[1].stdout
    [row] = json.loads(listed[0].stdout)
    assert (row["run_id"], row["tags"], row["status"]) == (run_id, ["main"], "completed")


@pytest.mark.parametrize(
    ("tag", "says"),
    [
        ("", "the tag cannot be empty or only whitespace"),
        (" \t", "the tag cannot be empty or only whitespace"),
        ("main ", "the tag 'main ' starts or ends with whitespace: give it as 'main'"),
    ],
)
def test_a_blank_tag_is_refused_before_any_replay_and_never_stored(
    database_url: str,
    sessions: sessionmaker[Session],
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
    tag: str,
    says: str,
) -> None:
    """An empty shell variable as the tag (``--tag "$BRANCH"``) stored a blank tag that ``gate --baseline
    ''`` then found; ``eval run --tag`` refused nothing, and only after the whole replay. A tag with a
    space at an end was stored beside the one without it, which the gate's ``--baseline`` then read."""
    settings = EvalSettings(eval_endpoint=scripted_target.url, eval_concurrency=2)
    run_id = str(run_eval(sessions, _sync(sessions), settings, ScoringContext(similarity=similarity)).run_id)
    asked = len(scripted_target.headers_seen)
    tagging = run_cli("eval", "tag", run_id, tag, database_url=database_url)
    running = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, "--tag", tag,
        database_url=database_url,
    )  # fmt: skip
    for result in (tagging, running):
        assert result.returncode == 2, result.stdout + result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line == f"evallens: error: {says}"
    assert len(scripted_target.headers_seen) == asked  # nothing replayed
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 1
        assert session.scalar(select(func.count()).select_from(EvalTag)) == 0


def test_a_gate_against_a_baseline_scored_otherwise_refuses_before_replaying(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    eval_set_id = _sync(sessions)
    settings = EvalSettings(eval_endpoint=scripted_target.url, eval_concurrency=2)
    scoring = ScoringContext(similarity=similarity)
    baseline = str(run_eval(sessions, eval_set_id, settings, scoring).run_id)
    asked = len(scripted_target.headers_seen)
    moved = dataclasses.replace(scoring, similarity_threshold=0.3)
    with pytest.raises(ScoredDifferently, match=r"\(settings changed\)"):
        gate_endpoint(sessions, baseline, scripted_target.url, settings, moved)
    assert len(scripted_target.headers_seen) == asked  # nothing replayed
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalRun)) == 1
    outcome = gate_endpoint(sessions, baseline, scripted_target.url, settings, scoring)
    assert outcome.body.verdict == "pass" and outcome.body.baseline_run_id == baseline


def test_a_judge_down_when_the_run_starts_is_recorded_by_the_model_that_scored(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    """Two runs whose judge could not name its model at the start must not pass as scored alike."""
    eval_set_id = _sync(sessions)
    with faulty_judge() as judge:
        judge.models_down = 1  # the run's start asks, and hears nothing; the scoring asks again
        settings = EvalSettings(
            eval_endpoint=scripted_target.url, eval_judge_endpoint=judge.url, eval_judge_mode="judge"
        )
        run_id = run_eval(sessions, eval_set_id, settings, build_scoring_context(settings, similarity)).run_id
    assert judge.requests and {request["model"] for request in judge.requests} == {"faulty-judge"}
    with sessions() as session:
        run = session.get_one(EvalRun, run_id)
        assert run.status == "completed" and run.scoring is not None
        assert run.scoring["judge"] == {"endpoint": f"{judge.url}/v1", "model": "faulty-judge"}


def test_a_gate_whose_judge_is_down_says_so_rather_than_that_scoring_changed(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, similarity: MiniLmSimilarity
) -> None:
    eval_set_id = _sync(sessions)
    with faulty_judge() as judge:
        settings = EvalSettings(
            eval_endpoint=scripted_target.url, eval_judge_endpoint=judge.url, eval_judge_mode="judge"
        )
        baseline = str(
            run_eval(sessions, eval_set_id, settings, build_scoring_context(settings, similarity)).run_id
        )
        asked = len(scripted_target.headers_seen)
        judge.models_down = 2  # restarting while the gate checks how it will score
        with pytest.raises(
            EndpointUnreachable, match=r"judge endpoint answered HTTP 503.*EVALLENS_EVAL_JUDGE_MODEL"
        ):
            gate_endpoint(
                sessions, baseline, scripted_target.url, settings, build_scoring_context(settings, similarity)
            )
    assert len(scripted_target.headers_seen) == asked  # nothing replayed
