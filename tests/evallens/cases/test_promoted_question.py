"""A promoted case holds exactly the question the reviewer saw: the one ``cases mine`` and the Cases page
show for the trace (redacted), wherever the client recorded it."""

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
from evallens.cases.mining import Candidate, mine_cases
from evallens.settings import CasesSettings
from evallens.telemetry import attributes as attr
from evals.readers import mining_readers
from tests.evallens.cases.conftest import SET_NAME, counts
from tests.evallens.cases.traffic import Traffic, messages, request, request_with_content_events


def shown(sessions: sessionmaker[Session], trace_id: str) -> Candidate:
    """The candidate that lists ``trace_id``, as the Cases page shows it."""
    with sessions() as session:
        report = mine_cases(
            session, CasesSettings(), mining_readers(), project="default", since=timedelta(days=1), limit=50
        )
    [candidate] = [item for item in report.candidates if trace_id in item.trace_ids]
    return candidate


def promoted_question(sessions: sessionmaker[Session], trace_id: str) -> str:
    with sessions.begin() as session:
        report = cases.promote_traces(session, [trace_id], eval_set_name=SET_NAME, scenario="orders")
    return report.cases[0].question.text


def test_a_question_sent_as_a_content_event_is_stored_as_shown(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    with sessions.begin() as session:
        trace_id = request_with_content_events(
            session, traffic.now - timedelta(minutes=3), "  Where is my parcel?\n", events_first=False
        )
    assert shown(sessions, trace_id).question == "Where is my parcel?"
    assert promoted_question(sessions, trace_id) == "Where is my parcel?"


def test_a_blank_question_sent_as_a_content_event_is_no_question(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    with sessions.begin() as session:
        trace_id = request_with_content_events(
            session, traffic.now - timedelta(minutes=3), " \n ", events_first=True
        )
    assert shown(sessions, trace_id).question is None
    before = counts(sessions)
    with pytest.raises(cases.TraceWithoutQuestion), sessions.begin() as session:
        cases.promote_traces(session, [trace_id], eval_set_name=SET_NAME, scenario="orders")
    assert counts(sessions) == before


def test_gen_ai_messages_on_a_later_span_come_before_an_earlier_input_value(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    """An OpenInference chain span (input.value) around a GenAI chat span: the question is read from
    ``gen_ai.input.messages`` first (docs/feedback.md), whichever span started first."""
    with sessions.begin() as session:
        trace_id = request(
            session, traffic.now - timedelta(minutes=3), None, None, error=True,
            root={attr.INPUT_VALUE: "where's my order"},
            chat={attr.GEN_AI_INPUT_MESSAGES: messages("user", "Where is my order #1234?")},
        )  # fmt: skip
    assert shown(sessions, trace_id).question == "Where is my order #1234?"
    assert promoted_question(sessions, trace_id) == "Where is my order #1234?"
