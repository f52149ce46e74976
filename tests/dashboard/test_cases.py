"""The Cases page: the same candidates as ``evallens cases mine``; promotion through the core function."""

import json
import logging
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from dashboard import data
from dashboard._ui import WINDOWS_H
from evallens import cases
from evallens.cases.mining import REASONS
from evallens.db import create_db_engine
from evallens.db.models import EvalCase, EvalSet, QuestionEmbedding
from evallens.markdown import literal
from evallens.ports import free_port
from evallens.telemetry import attributes as attr
from evals.readers import mining_readers
from tests.dashboard.conftest import TIMEOUT_S, open_page
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
    assert literal("My email is [EMAIL] and my phone is [PHONE], where is my order?") in preview
    assert any("Redacted: email, phone" in caption.value for caption in app.caption)
    app.radio[0].set_value("answer")
    app.text_area[0].input("Orders ship within 2 days.")
    next(button for button in app.button if "Promote" in button.label).click().run()
    assert not app.error, [error.value for error in app.error]
    message = f"Promoted 2 case(s) into {literal(SET_NAME)} v2: 0 need review"
    assert any(message in success.value for success in app.success)
    promoted = [case for case in stored_cases(app_database, 2) if case.source_trace_id]
    assert {case.status for case in promoted} == {"active"}  # complete: expected answer with a reference
    assert {case.source_trace_id for case in promoted} == {seeded.feedback_trace, seeded.slow_trace}
    assert {case.reference_answer for case in promoted} == {"Orders ship within 2 days."}
    assert {case.scenario for case in promoted} == {"harmful"}  # first scenario of the set, alphabetically


def test_the_scenarios_offered_are_those_of_the_chosen_set(app_database: str, seeded: Seeded) -> None:
    engine = create_db_engine(app_database)
    try:
        with Session(engine) as db, db.begin():
            other = EvalSet(name="other-set", version=1, content_hash="other-v1")
            db.add(other)
            db.flush()
            db.add(
                EvalCase(
                    eval_set_id=other.id,
                    case_key="s-1",
                    scenario="shipping",
                    question="Do you ship to Norway?",
                    expected_behavior="decline",
                )
            )
    finally:
        engine.dispose()
    app = open_page("app_pages/cases.py")
    app.multiselect[0].select(seeded.feedback_trace).run()
    boxes = {box.label: box for box in app.selectbox if box.label in ("Eval set", "Scenario")}
    # in a browser a widget in a form reruns nothing until the form is sent (AppTest does not defer it):
    # the scenarios listed would still be the other set's, and the one picked there not the one stored
    assert {label: box.form_id for label, box in boxes.items()} == {"Eval set": "", "Scenario": ""}
    boxes["Eval set"].set_value("other-set").run()
    scenario = next(box for box in app.selectbox if box.label == "Scenario")
    assert scenario.options == ["shipping"]
    next(button for button in app.button if "Promote" in button.label).click().run()
    assert not app.error, [error.value for error in app.error]
    engine = create_db_engine(app_database)
    try:
        with Session(engine) as db:
            version_2 = (EvalSet.name == "other-set") & (EvalSet.version == 2)
            stored = db.scalars(select(EvalCase.scenario).join(EvalSet).where(version_2)).all()
    finally:
        engine.dispose()
    assert sorted(stored) == ["shipping", "shipping"]  # the set's case and the promoted one


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


def stored_embeddings(url: str) -> int:
    engine = create_db_engine(url)
    try:
        with Session(engine) as db:
            return db.scalar(select(func.count()).select_from(QuestionEmbedding)) or 0
    finally:
        engine.dispose()


def test_questions_are_embedded_ahead_so_a_cases_view_embeds_none(
    app_database: str, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALLENS_DASHBOARD_EMBED_AHEAD_S", "3600")  # one pass in this test
    assert stored_embeddings(app_database) == 0
    open_page()  # the overview: the dashboard starts embedding ahead, no Cases view yet
    running = [thread for thread in threading.enumerate() if thread.name == "embed-ahead"]
    assert len(running) == 1
    windows = tuple(timedelta(hours=hours) for hours in WINDOWS_H.values())
    ahead = data.cases.embedding_ahead(data.database_url(), 3600.0, windows, mining_readers())  # the same one
    deadline = time.monotonic() + TIMEOUT_S
    while ahead.passes == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ahead.passes == 1 and ahead.embedded > 0
    assert stored_embeddings(app_database) == ahead.embedded
    app = open_page("app_pages/cases.py", window="24h")
    assert len(app.dataframe[0].value) > 0
    next(box for box in app.selectbox if box.label == "Window").set_value("7d").run()
    assert len(app.dataframe[0].value) > 0
    assert stored_embeddings(app_database) == ahead.embedded  # the views embedded nothing new
    assert [thread for thread in threading.enumerate() if thread.name == "embed-ahead"] == running


def test_embedding_ahead_outlives_a_database_it_cannot_reach(caplog: pytest.LogCaptureFixture) -> None:
    unreachable = f"postgresql+psycopg://evallens@127.0.0.1:{free_port()}/nothing"
    ahead = data.cases.EmbeddingAhead(unreachable, 0.05, (timedelta(days=1),), mining_readers())
    thread = threading.Thread(target=ahead.run)
    with caplog.at_level(logging.WARNING, logger="dashboard.data.cases"):
        thread.start()
        deadline = time.monotonic() + 60
        while ahead.passes < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        ahead.stop.set()
        thread.join(10)
    assert ahead.passes >= 2 and ahead.embedded == 0 and not thread.is_alive()
    assert "embedding ahead failed (" in caplog.text and "Connection refused" in caplog.text
