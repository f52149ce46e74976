"""The Cases page: the same candidates as ``evallens cases mine``; promotion through the core function."""

import json
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens import cases
from evallens.cases.mining import REASONS
from evallens.db import create_db_engine
from evallens.db.models import EvalCase, EvalSet
from evallens.telemetry import attributes as attr
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import PII_QUESTION, REDACTED_QUESTION, SET_NAME, Seeded, hex_id, request_trace
from tests.evals.conftest import run_cli

DUPLICATE = "Where is the refund for my returned tent"


def stored_cases(url: str, version: int) -> list[EvalCase]:
    engine = create_db_engine(url)
    try:
        with Session(engine) as db:
            set_id = db.scalars(
                select(EvalSet.id).where(EvalSet.name == SET_NAME, EvalSet.version == version)
            ).one()
            return list(
                db.scalars(select(EvalCase).where(EvalCase.eval_set_id == set_id).order_by(EvalCase.case_key))
            )
    finally:
        engine.dispose()


def test_promote_errors_change_nothing(app_database: str, seeded: Seeded) -> None:
    engine = create_db_engine(app_database)
    try:
        with Session(engine) as db:
            with pytest.raises(cases.UnknownEvalSet):
                cases.promote_traces(db, [seeded.error_trace], eval_set_name="nope", scenario="x")
            with pytest.raises(cases.UnknownTrace):
                cases.promote_traces(db, ["f" * 32], eval_set_name=SET_NAME, scenario="x")
            db.rollback()
            report = cases.promote_traces(
                db,
                [seeded.feedback_trace, seeded.error_trace],
                eval_set_name=SET_NAME,
                scenario="returns_refunds",
            )
            db.commit()
            assert report.version == 2
            with pytest.raises(cases.AlreadyPromoted):
                cases.promote_traces(db, [seeded.error_trace], eval_set_name=SET_NAME, scenario="x")
            db.rollback()
    finally:
        engine.dispose()
    promoted = {case.source_trace_id: case for case in stored_cases(app_database, 2) if case.source_trace_id}
    assert set(promoted) == {seeded.feedback_trace, seeded.error_trace}
    assert len(stored_cases(app_database, 2)) == 4 + 2  # the four curated cases were carried over
    feedback_case = promoted[seeded.feedback_trace]
    assert feedback_case.status == "needs_review"
    assert feedback_case.question == "My email is [EMAIL] and my phone is [PHONE], where is my order?"
    assert [r["kind"] for r in feedback_case.redactions or []] == ["email", "phone"]
    assert "jane.doe" not in str(feedback_case.redactions)


def test_promote_from_the_cases_page(app_database: str, seeded: Seeded) -> None:
    app = open_page("app_pages/cases.py")
    app.multiselect[0].select(seeded.feedback_trace).select(seeded.slow_trace).run()
    preview = " ".join(str(markdown.value) for markdown in app.markdown)
    assert "My email is [EMAIL] and my phone is [PHONE], where is my order?" in preview
    assert any("Redacted: email, phone" in caption.value for caption in app.caption)
    app.radio[0].set_value("answer")
    app.text_area[0].input("Orders ship within 2 days.")
    next(button for button in app.button if "Promote" in button.label).click().run()
    assert not app.error, [error.value for error in app.error]
    assert any("Promoted 2 case(s) into acme-support v2: 0 need review" in s.value for s in app.success)
    promoted = [case for case in stored_cases(app_database, 2) if case.source_trace_id]
    assert {case.status for case in promoted} == {"active"}  # complete: expected answer with a reference
    assert {case.source_trace_id for case in promoted} == {seeded.feedback_trace, seeded.slow_trace}
    assert {case.reference_answer for case in promoted} == {"Orders ship within 2 days."}
    assert {case.scenario for case in promoted} == {"harmful"}  # first scenario of the set, alphabetically


def add_refusal_and_duplicates(url: str, seeded: Seeded) -> list[str]:
    """Three more bad traces: two failures of one question (merged as duplicates) and an in-scope
    answer that does not know (the refusal signal, read with the eval engine's grammar)."""
    traces = [hex_id("d", 1), hex_id("d", 2), hex_id("d", 3)]
    spans = [
        *request_trace(traces[0], 501, seeded.now - timedelta(minutes=9), question=DUPLICATE, error=True),
        *request_trace(
            traces[1], 502, seeded.now - timedelta(minutes=8), question=DUPLICATE + "?", error=True
        ),
        *request_trace(
            traces[2], 503, seeded.now - timedelta(minutes=7), question="Is the TR-4410 waterproof?"
        ),
    ]
    answer = [{"role": "assistant", "content": "I'm sorry, I don't know. Call me at 555-201-7734."}]
    spans[6].attributes = {**spans[6].attributes, attr.GEN_AI_OUTPUT_MESSAGES: json.dumps(answer)}
    engine = create_db_engine(url)
    try:
        with Session(engine) as db, db.begin():
            db.add_all(spans)
    finally:
        engine.dispose()
    return traces


def test_the_cases_page_ranks_redacts_and_merges_like_cases_mine(app_database: str, seeded: Seeded) -> None:
    duplicates, refusal = add_refusal_and_duplicates(app_database, seeded)[:2], hex_id("d", 3)
    cli = run_cli("cases", "mine", "--since", "7d", "--limit", "200", "--json", database_url=app_database)
    assert cli.returncode == 0, cli.stderr
    mined = json.loads(cli.stdout)["candidates"]
    app = open_page("app_pages/cases.py", window="24h")
    next(box for box in app.selectbox if box.label == "Window").set_value("7d").run()
    table = app.dataframe[0].value

    assert list(table["trace_id"]) == [candidate["trace_id"] for candidate in mined]  # same order
    assert list(table["score"]) == [candidate["score"] for candidate in mined]
    assert list(table["count"]) == [candidate["count"] for candidate in mined]
    assert list(table["reasons"]) == [", ".join(REASONS[r] for r in c["reasons"]) for c in mined]
    shown = [question if isinstance(question, str) else None for question in table["question"]]
    assert shown == [candidate["question"] for candidate in mined]
    # what makes the two the same: duplicates merged, the refusal read, personal data redacted
    merged = next(candidate for candidate in mined if candidate["count"] == 2)
    assert set(merged["trace_ids"]) == set(duplicates) and merged["trace_id"] in set(table["trace_id"])
    assert dict(zip(table["trace_id"], table["reasons"], strict=True))[refusal] == REASONS["refusal"]
    assert REDACTED_QUESTION in shown and PII_QUESTION not in shown
