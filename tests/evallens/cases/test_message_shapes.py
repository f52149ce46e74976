"""A client's chat messages hold whatever JSON it sent: content that is no text is no question (or
answer), for mining and promotion alike, never a crash of ``cases mine``, ``cases promote`` or the
Cases page."""

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
from evallens.cases.mining import mine_cases
from evallens.settings import CasesSettings
from evallens.telemetry import attributes as attr
from evals.readers import mining_readers
from tests.evallens.cases.conftest import SET_NAME, counts
from tests.evallens.cases.traffic import Traffic, request

NOT_TEXT: list[dict[str, Any]] = [
    {"content": 5},
    {"content": True},
    {"content": 2.5},
    {"content": None, "parts": 7},
    {"parts": {"type": "text", "content": "a part, not a list of parts"}},
]


@pytest.mark.parametrize("message", NOT_TEXT)
def test_content_that_is_no_text_is_no_question(
    sessions: sessionmaker[Session], traffic: Traffic, message: dict[str, Any]
) -> None:
    with sessions.begin() as session:
        trace_id = request(
            session, traffic.now - timedelta(minutes=3), None, None, error=True,
            root={
                attr.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", **message}]),
                attr.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", **message}]),
            },
        )  # fmt: skip
    with sessions() as session:
        report = mine_cases(
            session, CasesSettings(), mining_readers(), project="default", since=timedelta(days=1), limit=50
        )
    [candidate] = [item for item in report.candidates if trace_id in item.trace_ids]
    assert (candidate.question, candidate.answer, candidate.reasons) == (None, None, ["error"])
    before = counts(sessions)
    with pytest.raises(cases.TraceWithoutQuestion), sessions.begin() as session:
        cases.promote_traces(session, [trace_id], eval_set_name=SET_NAME, scenario="orders")
    assert counts(sessions) == before
