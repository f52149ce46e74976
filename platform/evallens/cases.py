"""Production traces into eval sets: read a trace's question, redact personal data, promote as cases.

Functions take the session first and never commit; the caller owns the transaction. Promoted cases
enter a new version of the chosen set as ``needs_review`` with a link to their source trace.
"""

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import insert, literal, select
from sqlalchemy.dialects.postgresql import array
from sqlalchemy.orm import Session

from evallens.db.models import EvalCase, EvalSet, Span
from evallens.errors import EvallensError
from evallens.telemetry import attributes

Expected = Literal["answer", "decline", "refuse"]
NEEDS_REVIEW = "needs_review"
PROMOTED_TAG = "promoted"
QUESTION_ATTRIBUTES = (attributes.GEN_AI_INPUT_MESSAGES, attributes.INPUT_VALUE)

# Order matters: cards before phones, so a 16-digit card is not read as a phone number.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")),
    ("card", re.compile(r"\b(?:\d[ -]?){12,18}\d\b")),
    ("phone", re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d\b")),
    (
        "address",
        re.compile(
            r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}"
            r"(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct)\b"
        ),
    ),
)


class UnknownEvalSet(EvallensError):
    """The set to promote into does not exist."""


class UnknownTrace(EvallensError):
    """No span of this trace is stored."""


class TraceWithoutQuestion(EvallensError):
    """The trace carries no user question to turn into a case."""


class AlreadyPromoted(EvallensError):
    """The trace is already a case of the set's latest version."""


@dataclass(frozen=True)
class Redaction:
    """One piece of personal data replaced in a text: its kind and where the placeholder now sits."""

    kind: str
    start: int
    end: int
    placeholder: str


@dataclass(frozen=True)
class RedactedText:
    """A text with personal data replaced by placeholders, and what was replaced."""

    text: str
    redactions: tuple[Redaction, ...] = ()


@dataclass(frozen=True)
class PromotedCase:
    """One case created from a trace."""

    case_key: str
    trace_id: str
    question: RedactedText


@dataclass(frozen=True)
class PromotionReport:
    """The new set version and the cases promoted into it."""

    eval_set_name: str
    version: int
    eval_set_id: int
    cases: list[PromotedCase] = field(default_factory=list)


def redact(text: str) -> RedactedText:
    """Replace emails, card numbers, phone numbers and street addresses with ``[KIND]`` placeholders."""
    found: list[tuple[int, int, str]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if not any(start < match.end() and match.start() < end for start, end, _ in found):
                found.append((match.start(), match.end(), kind))
    pieces: list[str] = []
    redactions: list[Redaction] = []
    position = 0
    length = 0
    for start, end, kind in sorted(found):
        pieces.append(text[position:start])
        length += start - position
        placeholder = f"[{kind.upper()}]"
        redactions.append(Redaction(kind, length, length + len(placeholder), placeholder))
        pieces.append(placeholder)
        length += len(placeholder)
        position = end
    pieces.append(text[position:])
    return RedactedText("".join(pieces), tuple(redactions))


def question_from_attribute(value: Any) -> str | None:
    """The last user message in a GenAI/OpenInference input attribute (JSON messages or plain text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value.strip() or None
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        value = value.get("messages", [value])
    if not isinstance(value, list):
        return None
    for message in reversed(value):
        if isinstance(message, dict) and message.get("role") == "user":
            return _message_text(message)
    return None


def _message_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    parts = message.get("parts") or content or []
    texts = [str(part.get("content") or part.get("text") or "") for part in parts if isinstance(part, dict)]
    return " ".join(text for text in texts if text).strip() or None


def trace_questions(session: Session, trace_ids: Sequence[str]) -> dict[str, str | None]:
    """The user question of each trace (from its earliest span that carries one); None when none does."""
    questions: dict[str, str | None] = dict.fromkeys(trace_ids)
    has_question = Span.attributes.has_any(array(QUESTION_ATTRIBUTES))
    rows = session.execute(
        select(Span.trace_id, Span.attributes)
        .where(Span.trace_id.in_(list(trace_ids)), has_question)
        .order_by(Span.start_time)
    )
    for trace_id, span_attributes in rows:
        if questions.get(trace_id) is None:
            for name in QUESTION_ATTRIBUTES:
                question = question_from_attribute(span_attributes.get(name))
                if question:
                    questions[trace_id] = question
                    break
    return questions


def latest_eval_set(session: Session, name: str, project: str = "default") -> EvalSet:
    """The newest version of set ``name``, or ``UnknownEvalSet``."""
    eval_set = session.scalars(
        select(EvalSet)
        .where(EvalSet.project == project, EvalSet.name == name)
        .order_by(EvalSet.version.desc())
        .limit(1)
    ).first()
    if eval_set is None:
        raise UnknownEvalSet(f"no eval set named {name!r}; run `evallens eval sets sync` first")
    return eval_set


def promote_traces(
    session: Session,
    trace_ids: Sequence[str],
    *,
    eval_set_name: str,
    scenario: str,
    expected: Expected = "answer",
    reference_answer: str | None = None,
    project: str = "default",
) -> PromotionReport:
    """Copy the latest version of a set into a new version plus one ``needs_review`` case per trace."""
    unique_ids = list(dict.fromkeys(trace_ids))
    if not unique_ids:
        raise UnknownTrace("no trace ids given")
    source = latest_eval_set(session, eval_set_name, project)
    questions = _checked_questions(session, unique_ids, source)
    new_cases = [
        PromotedCase(case_key=f"prod-{trace_id}", trace_id=trace_id, question=redact(question))
        for trace_id, question in questions.items()
    ]
    target = EvalSet(
        project=project,
        name=eval_set_name,
        version=source.version + 1,
        content_hash=_content_hash(source.content_hash, new_cases, scenario, expected, reference_answer),
        description=source.description,
        source_path=source.source_path,
    )
    session.add(target)
    session.flush()
    _copy_cases(session, source.id, target.id)
    for case in new_cases:
        session.add(
            EvalCase(
                eval_set_id=target.id,
                case_key=case.case_key,
                scenario=scenario,
                question=case.question.text,
                reference_answer=reference_answer,
                expected_behavior=expected,
                tags=[PROMOTED_TAG],
                status=NEEDS_REVIEW,
                source_trace_id=case.trace_id,
                redactions=[vars(redaction) for redaction in case.question.redactions],
            )
        )
    session.flush()
    return PromotionReport(eval_set_name, target.version, target.id, new_cases)


def _checked_questions(session: Session, trace_ids: list[str], source: EvalSet) -> dict[str, str]:
    known = set(session.scalars(select(Span.trace_id).where(Span.trace_id.in_(trace_ids)).distinct()))
    for trace_id in trace_ids:
        if trace_id not in known:
            raise UnknownTrace(f"no trace with id {trace_id}")
    promoted = set(
        session.scalars(
            select(EvalCase.source_trace_id).where(
                EvalCase.eval_set_id == source.id, EvalCase.source_trace_id.in_(trace_ids)
            )
        )
    )
    if promoted:
        raise AlreadyPromoted(
            f"trace {sorted(map(str, promoted))[0]} is already a case of {source.name} v{source.version}"
        )
    questions = trace_questions(session, trace_ids)
    checked: dict[str, str] = {}
    for trace_id in trace_ids:
        question = questions.get(trace_id)
        if not question:
            raise TraceWithoutQuestion(f"trace {trace_id} carries no user question to promote")
        checked[trace_id] = question
    return checked


def _copy_cases(session: Session, source_id: int, target_id: int) -> None:
    columns = [column for column in EvalCase.__table__.columns if column.name not in {"id", "eval_set_id"}]
    copied = select(literal(target_id), *columns).where(EvalCase.eval_set_id == source_id)
    session.execute(
        insert(EvalCase).from_select(["eval_set_id", *(column.name for column in columns)], copied)
    )


def _content_hash(
    source_hash: str,
    cases: list[PromotedCase],
    scenario: str,
    expected: str,
    reference_answer: str | None,
) -> str:
    payload = {
        "base": source_hash,
        "promoted": [[case.case_key, case.question.text] for case in cases],
        "scenario": scenario,
        "expected": expected,
        "reference": reference_answer,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
