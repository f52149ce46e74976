"""The user question of production traces, read from their spans (or the content events sent beside them)."""

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.orm import Session

from evallens.db.models import GenAIContent, Span
from evallens.telemetry.messages import QUESTION_ATTRIBUTES, first_text, question_from_attribute


def trace_questions(session: Session, trace_ids: Sequence[str], project: str) -> dict[str, str | None]:
    """The user question of each trace of ``project``, read as mining reads it (so a case holds the
    question the reviewer saw): each question attribute from the earliest span carrying it, in the
    order of ``QUESTION_ATTRIBUTES``, else the GenAI content events of the trace's earliest span that has
    any; None when none holds one. Another project's spans and events never count, even under the same
    trace id."""
    questions: dict[str, str | None] = dict.fromkeys(trace_ids)
    has_question = Span.attributes.has_any(array(QUESTION_ATTRIBUTES))
    rows = session.execute(
        select(Span.trace_id, Span.attributes)
        .where(Span.project == project, Span.trace_id.in_(list(trace_ids)), has_question)
        .order_by(Span.start_time)
    )
    earliest: dict[str, dict[str, object]] = {}  # per trace: attribute -> its value on the earliest span
    for trace_id, span_attributes in rows:
        found = earliest.setdefault(trace_id, {})
        for name in QUESTION_ATTRIBUTES:
            if name in span_attributes:
                found.setdefault(name, span_attributes[name])
    for trace_id, found in earliest.items():
        questions[trace_id] = first_text([found.get(name) for name in QUESTION_ATTRIBUTES], "user")
    missing = [trace_id for trace_id, question in questions.items() if question is None]
    if missing:
        questions.update(_event_questions(session, missing, project))
    return questions


def _event_questions(session: Session, trace_ids: list[str], project: str) -> dict[str, str | None]:
    """The last user message among the input content events of each trace's earliest span with any."""
    rows = session.execute(
        select(GenAIContent.trace_id, GenAIContent.span_id, GenAIContent.messages)
        .where(
            GenAIContent.project == project,
            GenAIContent.trace_id.in_(trace_ids),
            GenAIContent.direction == "input",
        )
        .order_by(GenAIContent.time, GenAIContent.id)
    )
    first_span: dict[str, str] = {}
    messages: dict[str, list[object]] = {}
    for trace_id, span_id, event_messages in rows:
        if first_span.setdefault(trace_id, span_id) == span_id:
            messages.setdefault(trace_id, []).extend(event_messages)
    # read as mining reads them (stripped, None when blank): the case holds the question the page showed
    return {trace_id: question_from_attribute(found) for trace_id, found in messages.items()}
