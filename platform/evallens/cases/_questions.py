"""The user question of production traces, read from their spans."""

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.orm import Session

from evallens.db.models import Span
from evallens.telemetry.messages import QUESTION_ATTRIBUTES, first_text


def trace_questions(session: Session, trace_ids: Sequence[str], project: str) -> dict[str, str | None]:
    """The user question of each trace of ``project`` (from its earliest span there that carries one);
    None when none does. Another project's spans never count, even under the same trace id."""
    questions: dict[str, str | None] = dict.fromkeys(trace_ids)
    has_question = Span.attributes.has_any(array(QUESTION_ATTRIBUTES))
    rows = session.execute(
        select(Span.trace_id, Span.attributes)
        .where(Span.project == project, Span.trace_id.in_(list(trace_ids)), has_question)
        .order_by(Span.start_time)
    )
    for trace_id, span_attributes in rows:
        if questions.get(trace_id) is None:
            values = [span_attributes.get(name) for name in QUESTION_ATTRIBUTES]
            questions[trace_id] = first_text(values, "user")
    return questions
