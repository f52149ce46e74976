"""Promotion, review and replay: needs-review cases wait, reviewed ones enter a new version and the run."""

from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
from evallens.cases.mining import mine_cases
from evallens.db.models import EvalCase, EvalSet
from evallens.errors import EvallensError
from evallens.settings import CasesSettings, EvalSettings
from evallens.telemetry.attributes import HEADER_EVAL_CASE_ID
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.result import ScoringContext
from evals.readers import mining_readers
from evals.runner.run import run_eval
from evals.sets.store import find_set_version, load_cases
from tests.evallens.cases.conftest import SET_NAME, counts
from tests.evallens.cases.traffic import Traffic
from tests.evals.conftest import ScriptedTarget, run_cli


def version(sessions: sessionmaker[Session], number: int) -> tuple[EvalSet, dict[str, EvalCase]]:
    with sessions() as session:
        eval_set = find_set_version(session, f"{SET_NAME}@{number}")
        return eval_set, {case.case_key: case for case in cases.set_cases(session, eval_set.id)}


def test_promote_review_then_the_next_run_replays_the_case(
    database_url: str,
    sessions: sessionmaker[Session],
    traffic: Traffic,
    scripted_target: ScriptedTarget,
    similarity: MiniLmSimilarity,
) -> None:
    promoted = run_cli(
        "cases", "promote", traffic.feedback, traffic.refusal, "--set", SET_NAME, "--scenario", "orders",
        database_url=database_url,
    )  # fmt: skip
    assert promoted.returncode == 0, promoted.stderr
    assert "[EMAIL]" in promoted.stdout and "redacted: email, phone" in promoted.stdout
    v1, v1_cases = version(sessions, 1)
    v2, v2_cases = version(sessions, 2)
    key = cases.case_key_for(traffic.feedback)
    stored = v2_cases[key]
    assert (stored.status, stored.source_trace_id, stored.tags) == (
        "needs_review",
        traffic.feedback,
        ["promoted"],
    )
    assert stored.question == "My email is [EMAIL] and my phone is [PHONE], where is my order?"
    assert [r["kind"] for r in stored.redactions or []] == ["email", "phone"]
    assert "jane.doe" not in str(stored.redactions)
    with sessions() as session:
        # needs-review cases change nothing the runner replays
        assert [c.case_key for c in load_cases(session, v2.id)] == [
            c.case_key for c in load_cases(session, v1.id)
        ]
    assert v2.content_hash != v1.content_hash

    reviewed = run_cli(
        "cases", "review", key, "--set", SET_NAME, "--reference", "Orders ship within 2 business days.",
        "--fact", "2 business days", database_url=database_url,
    )  # fmt: skip
    assert reviewed.returncode == 0, reviewed.stderr
    v3, v3_cases = version(sessions, 3)
    assert (v3_cases[key].status, v3_cases[key].required_facts) == ("active", ["2 business days"])
    assert v3_cases[cases.case_key_for(traffic.refusal)].status == "needs_review"  # still waiting
    assert v2_cases[key].status == "needs_review"  # old versions never change

    scripted_target.answers = {stored.question or "": "Orders ship within 2 business days."}
    settings = EvalSettings(eval_endpoint=scripted_target.url + "/v1/", eval_concurrency=2)
    run = run_eval(sessions, v3.id, settings, ScoringContext(similarity=similarity))
    replayed = {headers[HEADER_EVAL_CASE_ID] for headers in scripted_target.headers_seen}
    assert replayed == {"rr-001", "rr-002", "oos-001", "h-001", key}
    assert run.summary.num_cases == 5

    with sessions() as session:  # promoted traces are never mined again
        report = mine_cases(
            session, CasesSettings(), mining_readers(), project="default", since=timedelta(days=1), limit=50
        )
    mined = {trace_id for candidate in report.candidates for trace_id in candidate.trace_ids}
    assert traffic.duplicates[0] in mined and not {traffic.feedback, traffic.refusal} & mined


def test_a_complete_case_is_active_at_once(sessions: sessionmaker[Session], traffic: Traffic) -> None:
    with sessions.begin() as session:
        report = cases.promote_traces(
            session, [traffic.refusal], eval_set_name=SET_NAME, scenario="warranty", expected="decline"
        )
    assert [case.status for case in report.cases] == ["active"]
    with sessions() as session:
        keys = [case.case_key for case in load_cases(session, report.eval_set_id)]
    assert cases.case_key_for(traffic.refusal) in keys


def test_a_trace_id_pasted_in_capitals_or_with_spaces_is_the_trace(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    """Trace ids are stored in lower-case hex; a viewer may show them in capitals, a copy may add spaces."""
    pasted = [f" {traffic.refusal.upper()}\n", traffic.refusal]  # twice, the same trace
    with sessions.begin() as session:
        report = cases.promote_traces(
            session, pasted, eval_set_name=SET_NAME, scenario="warranty", expected="decline"
        )
    assert [(case.case_key, case.trace_id) for case in report.cases] == [
        (cases.case_key_for(traffic.refusal), traffic.refusal)
    ]


def test_a_blank_reference_is_no_reference(sessions: sessionmaker[Session], traffic: Traffic) -> None:
    with sessions.begin() as session:
        report = cases.promote_traces(
            session, [traffic.slow], eval_set_name=SET_NAME, scenario="orders", reference_answer="  \n"
        )
    with sessions() as session:
        stored = {case.case_key: case for case in cases.set_cases(session, report.eval_set_id)}
    promoted = stored[cases.case_key_for(traffic.slow)]
    assert (promoted.status, promoted.reference_answer) == ("needs_review", None)


def test_reject_keeps_the_case_out_of_runs(sessions: sessionmaker[Session], traffic: Traffic) -> None:
    with sessions.begin() as session:
        cases.promote_traces(session, [traffic.slow], eval_set_name=SET_NAME, scenario="pricing")
        report = cases.review_cases(
            session, [cases.case_key_for(traffic.slow)], cases.CaseReview(reject=True), eval_set_name=SET_NAME
        )
    assert report.statuses == {cases.case_key_for(traffic.slow): "rejected"}
    with sessions() as session:
        assert cases.case_key_for(traffic.slow) not in {
            c.case_key for c in load_cases(session, report.eval_set_id)
        }


@pytest.mark.parametrize(
    ("review", "named"),
    [
        ({"reference_answer": "We match prices within 14 days."}, "reference answer"),
        ({"expected": "decline"}, "expected behaviour"),
        ({"required_facts": ["14 days"], "question": "Price match?"}, "required facts, question"),
        ({"reference_context_ids": ["pricing"]}, "reference context ids"),
    ],
)
def test_a_rejection_that_also_completes_the_case_is_refused(
    sessions: sessionmaker[Session], traffic: Traffic, review: dict[str, object], named: str
) -> None:
    """A rejected case keeps none of a review's content: a reference given with ``--reject`` was
    silently dropped, and the reviewer never learnt which of the two they got."""
    with sessions.begin() as session:
        cases.promote_traces(session, [traffic.slow], eval_set_name=SET_NAME, scenario="pricing")
    before = counts(sessions)
    decision = cases.CaseReview(reject=True, **review)  # type: ignore[arg-type]
    with (
        pytest.raises(cases.RejectWithChanges, match=f"a rejected case keeps no {named}: "),
        sessions.begin() as session,
    ):
        cases.review_cases(session, [cases.case_key_for(traffic.slow)], decision, eval_set_name=SET_NAME)
    assert counts(sessions) == before


BAD_INPUT = [
    (["cases", "promote", "f" * 32, "--set", SET_NAME, "--scenario", "x"], "no trace with id"),
    (["cases", "promote", "NO_QUESTION", "--set", SET_NAME, "--scenario", "x"], "carries no user question"),
    (["cases", "promote", "FEEDBACK", "--set", "nope", "--scenario", "x"], "no eval set named 'nope'"),
    (["cases", "promote", "EVAL", "--set", SET_NAME, "--scenario", "x"], "is eval traffic"),
    (
        ["cases", "promote", "FEEDBACK", "--set", SET_NAME, "--scenario", " "],
        "the scenario cannot be empty or only whitespace",
    ),
    (
        ["cases", "promote", " ", "--set", SET_NAME, "--scenario", "x"],
        "the trace id cannot be empty or only whitespace",
    ),
    (
        ["cases", "promote", "FEEDBACK", "", "--set", SET_NAME, "--scenario", "x"],
        "the trace id cannot be empty or only whitespace",
    ),
    (
        ["cases", "review", "rr-001", "--set", SET_NAME, "--reject", "--reference", "r"],
        "a rejected case keeps no reference answer: reject the case, or complete it, not both",
    ),
    (["cases", "review", "prod-x", "--set", SET_NAME, "--reference", "r"], "no case 'prod-x'"),
    (["cases", "review", "rr-001", "--set", SET_NAME, "--reference", "r"], "is active"),
    (["cases", "list", "--set", "nope"], "no eval set named 'nope'"),
    (["eval", "sets", "export", "nope", "--out", "x.yaml"], "no stored eval set 'nope'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    database_url: str, sessions: sessionmaker[Session], traffic: Traffic, args: list[str], message: str
) -> None:
    ids = {"NO_QUESTION": traffic.no_question, "FEEDBACK": traffic.feedback, "EVAL": traffic.eval_error}
    before = counts(sessions)
    result = run_cli(*(ids.get(arg, arg) for arg in args), database_url=database_url)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert counts(sessions) == before


def test_promoting_twice_and_reviewing_incomplete_change_nothing(
    database_url: str, sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    first = run_cli("cases", "promote", traffic.feedback, "--set", SET_NAME, "--scenario", "orders",
                    database_url=database_url)  # fmt: skip
    assert first.returncode == 0, first.stderr
    before = counts(sessions)
    again = run_cli("cases", "promote", traffic.degraded, traffic.feedback, "--set", SET_NAME,
                    "--scenario", "o", database_url=database_url)  # fmt: skip
    assert again.returncode == 2 and "already a case of mini-support v2" in again.stderr, again.stderr
    key = cases.case_key_for(traffic.feedback)
    incomplete = run_cli("cases", "review", key, "--set", SET_NAME, database_url=database_url)
    assert incomplete.returncode == 2 and "still has no reference answer" in incomplete.stderr
    assert counts(sessions) == before
    with sessions() as session:
        assert session.scalars(select(EvalCase.status).where(EvalCase.case_key == key)).all() == [
            "needs_review"
        ]
    listed = run_cli(
        "cases", "list", "--set", SET_NAME, "--status", "needs_review", database_url=database_url
    )
    assert listed.returncode == 0 and key[:20] in listed.stdout, listed.stderr


@pytest.mark.parametrize(
    ("promote", "review", "field"),
    [
        ({"scenario": "ord\x00ers"}, {}, "scenario"),
        ({"reference_answer": "Within\x00 30 days."}, {}, "reference answer"),
        ({}, {"reference_answer": "Within\x00 30 days."}, "reference answer"),
        ({}, {"required_facts": ["30\x00 days"], "reference_answer": "30 days"}, "required facts"),
        ({}, {"question": "Can I\x00 return it?", "reference_answer": "Yes."}, "question"),
    ],
)
def test_nul_typed_into_a_promotion_or_review_is_one_error_naming_the_field(
    sessions: sessionmaker[Session],
    traffic: Traffic,
    promote: dict[str, str],
    review: dict[str, object],
    field: str,
) -> None:
    """What the dashboard's forms pass on as typed (a NUL can be pasted): PostgreSQL refuses NUL in
    text, and the forms show only an ``EvallensError``; a psycopg traceback reached the page."""
    if review:
        with sessions.begin() as session:
            cases.promote_traces(session, [traffic.slow], eval_set_name=SET_NAME, scenario="pricing")
    before = counts(sessions)
    with (
        pytest.raises(EvallensError, match=f"the {field} holds a NUL character"),
        sessions.begin() as session,
    ):
        if review:
            key = cases.case_key_for(traffic.slow)
            cases.review_cases(session, [key], cases.CaseReview(**review), eval_set_name=SET_NAME)  # type: ignore[arg-type]
        else:
            scenario = promote.get("scenario", "pricing")
            reference = promote.get("reference_answer")
            cases.promote_traces(
                session, [traffic.slow], eval_set_name=SET_NAME, scenario=scenario, reference_answer=reference
            )
    assert counts(sessions) == before


@pytest.mark.parametrize(
    ("review", "message"),
    [
        ({"question": "  \n "}, "the question cannot be empty or only whitespace"),
        ({"question": ""}, "the question cannot be empty or only whitespace"),
        ({"scenario": " "}, "the scenario cannot be empty or only whitespace"),
    ],
)
def test_a_blank_question_or_scenario_in_a_review_is_refused(
    sessions: sessionmaker[Session], traffic: Traffic, review: dict[str, str], message: str
) -> None:
    """Promotion refuses a blank scenario; a review replacing the question or the scenario with blanks
    made an active case that asks nothing (or an empty ``--question`` was silently ignored)."""
    with sessions.begin() as session:
        cases.promote_traces(session, [traffic.slow], eval_set_name=SET_NAME, scenario="pricing")
    before = counts(sessions)
    key = cases.case_key_for(traffic.slow)
    decision = cases.CaseReview(
        reference_answer="We match prices within 14 days.",
        question=review.get("question"),
        scenario=review.get("scenario"),
    )
    with pytest.raises(EvallensError, match=message), sessions.begin() as session:
        cases.review_cases(session, [key], decision, eval_set_name=SET_NAME)
    assert counts(sessions) == before


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--fact", "14 days", "--fact", ""], "the required fact cannot be empty or only whitespace"),
        (["--fact", " \t"], "the required fact cannot be empty or only whitespace"),
        (["--context-id", ""], "the reference context id cannot be empty or only whitespace"),
        (
            ["--context-id", "pricing", "--context-id", "  "],
            "the reference context id cannot be empty or only whitespace",
        ),
    ],
)
def test_a_blank_fact_or_context_id_in_a_review_is_one_line_and_stores_nothing(
    database_url: str, sessions: sessionmaker[Session], traffic: Traffic, flags: list[str], message: str
) -> None:
    """`cases review --fact ""` stored an active case whose answers all missed an empty fact, and
    `--context-id ""` one that no retrieved document could ever match."""
    promoted = run_cli(
        "cases",
        "promote",
        traffic.slow,
        "--set",
        SET_NAME,
        "--scenario",
        "pricing",
        database_url=database_url,
    )
    assert promoted.returncode == 0, promoted.stderr
    before = counts(sessions)
    key = cases.case_key_for(traffic.slow)
    reviewed = run_cli(
        "cases", "review", key, "--set", SET_NAME, "--reference", "We match prices within 14 days.", *flags,
        database_url=database_url,
    )  # fmt: skip
    assert reviewed.returncode == 2, reviewed.stdout
    assert reviewed.stderr.strip().splitlines() == [f"evallens: error: {message}"]
    assert counts(sessions) == before
    with sessions() as session:
        assert session.scalars(select(EvalCase.status).where(EvalCase.case_key == key)).all() == [
            "needs_review"
        ]
