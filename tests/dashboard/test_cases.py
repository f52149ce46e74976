"""Redaction, promotion through the core module, and promotion from the Cases page."""

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens import cases
from evallens.db import create_db_engine
from evallens.db.models import EvalCase, EvalSet
from evallens.telemetry.messages import question_from_attribute
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import SET_NAME, Seeded


def test_redact_replaces_each_kind_and_says_where() -> None:
    text = "Mail jo@x.io, call 020 7946 0958, card 4111 1111 1111 1111, at 12 Baker Street."
    redacted = cases.redact(text)
    assert redacted.text == "Mail [EMAIL], call [PHONE], card [CARD], at [ADDRESS]."
    assert [r.kind for r in redacted.redactions] == ["email", "phone", "card", "address"]
    for redaction in redacted.redactions:
        assert redacted.text[redaction.start : redaction.end] == redaction.placeholder


def test_redact_leaves_ordinary_numbers_alone() -> None:
    text = "Is the TR-4410 backpack 45 litres, and can I return it within 30 days?"
    assert cases.redact(text) == cases.RedactedText(text, ())


@pytest.mark.parametrize(
    ("value", "question"),
    [
        ('[{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]', "Hi?"),
        ('[{"role": "system", "content": "Be nice"}, {"role": "user", "content": "Refund?"}]', "Refund?"),
        ("plain question", "plain question"),
        ('[{"role": "assistant", "content": "Hello"}]', None),
    ],
)
def test_question_from_attribute(value: str, question: str | None) -> None:
    assert question_from_attribute(value) == question


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
