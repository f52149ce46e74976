"""Read the user's question and the service's answer from GenAI / OpenInference span attributes."""

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.orm import Session

from evallens.db.models import Span
from evallens.telemetry import attributes

QUESTION_ATTRIBUTES = (attributes.GEN_AI_INPUT_MESSAGES, attributes.INPUT_VALUE)
ANSWER_ATTRIBUTES = (attributes.GEN_AI_OUTPUT_MESSAGES, attributes.OUTPUT_VALUE)


def question_from_attribute(value: Any) -> str | None:
    """The last user message in a GenAI/OpenInference input attribute (JSON messages or plain text)."""
    return _last_message(value, "user")


def answer_from_attribute(value: Any) -> str | None:
    """The last assistant message in a GenAI/OpenInference output attribute (JSON messages or text)."""
    return _last_message(value, "assistant")


def _last_message(value: Any, role: str) -> str | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value.strip() or None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        value = value.get("messages", value.get("choices", [value]))
    if not isinstance(value, list):
        return None
    for message in reversed(value):
        if isinstance(message, dict) and isinstance(message.get("message"), dict):
            message = message["message"]  # an OpenAI choice
        if isinstance(message, dict) and message.get("role") == role:
            return _message_text(message)
    return None


def _message_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    parts = message.get("parts") or content or []
    texts = [str(part.get("content") or part.get("text") or "") for part in parts if isinstance(part, dict)]
    return " ".join(text for text in texts if text).strip() or None


def first_text(values: Sequence[Any], role: str) -> str | None:
    """The first of several attribute values that holds a message of ``role``."""
    for value in values:
        text = _last_message(value, role) if value is not None else None
        if text:
            return text
    return None


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
