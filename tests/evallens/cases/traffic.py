"""Realistic production and eval spans for the mining tests: good traffic, bad traffic, feedback."""

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from evallens.db.models import GenAIContent, Span
from evallens.db.partitions import create_span_partitions
from evallens.telemetry import attributes as attr

GOOD_ANSWER = "You can return unopened items within 30 days of delivery for a full refund."
ORDINARY = [
    "What are your opening hours?",
    "Which sizes does the trail jacket come in?",
    "Is the TR-4410 backpack waterproof?",
    "How much is express shipping?",
    "Can I pay with PayPal?",
]
PII_QUESTION = "My email is jane.doe@example.com and my phone is +1 415 555 0100, where is my order?"
DUPLICATES = [
    "How do I return a damaged backpack?",
    "how can I return a damaged backpack",
    "How do I return my damaged backpack?",
]
IN_SET_QUESTION = "How many days do I have to return an unopened item?"  # rr-001 of tests/evals/sets/good


@dataclass
class Traffic:
    """Trace ids of each kind of traffic the tests assert on."""

    now: datetime
    ordinary: list[str] = field(default_factory=list)
    feedback: str = ""  # answered, then rated -1 from a separate feedback trace
    feedback_span_trace: str = ""
    liked: str = ""  # rated +1: not bad
    duplicates: list[str] = field(default_factory=list)  # three near-duplicate questions, each an error
    degraded: str = ""
    refusal: str = ""  # "I don't know" to an in-scope question
    declined: str = ""  # the scope guard declined an out-of-scope question: intended, not bad
    uncited: str = ""  # a RAG answer citing nothing
    slow: str = ""
    in_set: str = ""  # an error, but the question is already in a set
    eval_error: str = ""  # an error during an eval run: never a candidate
    no_question: str = ""  # an error without any question attribute


_ids = count(1)


def _hex(length: int) -> str:
    return f"{next(_ids):x}".rjust(length, "0")


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def request(
    session: Session,
    start: datetime,
    question: str | None,
    answer: str | None = GOOD_ANSWER,
    *,
    latency_ms: float = 400.0,
    error: bool = False,
    cited: bool = True,
    root: dict[str, Any] | None = None,
    guard: dict[str, Any] | None = None,
    chat: dict[str, Any] | None = None,
    eval_run_id: str | None = None,
) -> str:
    """One chat request as the reference service traces it: root, retrieval, guard and chat spans."""
    trace_id = _hex(32)
    root_id = _hex(16)
    attributes: dict[str, Any] = {attr.RETRIEVAL_CHUNK_IDS: ["returns-policy#0"] if cited else []}
    if question is not None:
        attributes[attr.GEN_AI_INPUT_MESSAGES] = messages("user", question)
    if answer is not None:
        attributes[attr.GEN_AI_OUTPUT_MESSAGES] = messages("assistant", answer)
    attributes.update(root or {})
    documents = json.dumps([{"id": "returns-policy#0", "score": 0.8}] if cited else [])

    def span(name: str, offset_ms: float, duration_ms: float, parent: str | None, **extra: Any) -> Span:
        begin = start + timedelta(milliseconds=offset_ms)
        return Span(
            trace_id=trace_id, span_id=root_id if parent is None else _hex(16), parent_span_id=parent,
            name=name, kind=2 if parent is None else 1, start_time=begin,
            end_time=begin + timedelta(milliseconds=duration_ms), duration_ms=duration_ms,
            status_code=2 if error and parent is None else 1, events=[],
            resource={attr.SERVICE_NAME: "evallens-service"}, eval_run_id=eval_run_id, **extra,
        )  # fmt: skip

    session.add_all(
        [
            span("POST /v1/chat/completions", 0, latency_ms, None, attributes=attributes),
            span(
                attr.SPAN_RETRIEVAL,
                5,
                30,
                root_id,
                attributes={
                    attr.GEN_AI_OPERATION_NAME: attr.OPERATION_RETRIEVAL,
                    attr.GEN_AI_RETRIEVAL_DOCUMENTS: documents,
                },
            ),  # fmt: skip
            span(
                attr.SPAN_GUARD_SCOPE, 36, 2, root_id, attributes=guard or {attr.GUARD_SCOPE_DECLINED: False}
            ),
            span(
                "chat smollm2",
                40,
                latency_ms - 50,
                root_id,
                attributes=chat or {},
                model="smollm2",
                cost_usd=0.001,
                input_tokens=100,
                output_tokens=30,
            ),  # fmt: skip
        ]
    )
    return trace_id


def feedback(session: Session, start: datetime, target: str, score: float, comment: str | None) -> str:
    """A feedback span in its own trace, pointing at the answered trace (as POST /v1/feedback records it)."""
    trace_id = _hex(32)
    attributes: dict[str, Any] = {attr.FEEDBACK_TARGET_TRACE_ID: target, attr.FEEDBACK_SCORE: score}
    if comment:
        attributes[attr.FEEDBACK_COMMENT] = comment
    session.add(
        Span(
            trace_id=trace_id,
            span_id=_hex(16),
            parent_span_id=None,
            name="POST /v1/feedback",
            kind=2,
            start_time=start,
            end_time=start + timedelta(milliseconds=3),
            duration_ms=3.0,
            status_code=1,
            events=[],
            resource={attr.SERVICE_NAME: "evallens-service"},
            attributes=attributes,
        )  # fmt: skip
    )
    return trace_id


def seed_traffic(session: Session) -> Traffic:
    """25 ordinary requests and every kind of bad (and not-bad) request, all in the last hour."""
    now = datetime.now(UTC)
    create_span_partitions(session.connection(), [(now - timedelta(days=d)).date() for d in range(-1, 9)])
    t = Traffic(now=now)

    def at(minutes: float) -> datetime:
        return now - timedelta(minutes=minutes)

    t.ordinary = [request(session, at(50 - i), ORDINARY[i % len(ORDINARY)]) for i in range(25)]
    t.feedback = request(session, at(20), PII_QUESTION, "Your order ships tomorrow.")
    t.feedback_span_trace = feedback(session, at(19), t.feedback, -1.0, "It never arrived")
    t.liked = request(session, at(18), "Do you sell gift cards?", "Yes, from $10 to $500.")
    feedback(session, at(17), t.liked, 1.0, "great")
    t.duplicates = [request(session, at(16 - i), q, None, error=True) for i, q in enumerate(DUPLICATES)]
    t.degraded = request(session, at(12), "Do you ship to Canada?", "Yes.", root={attr.DEGRADED: True})
    t.refusal = request(session, at(11), "What is the warranty on tents?", "I'm sorry, I don't know.")
    t.declined = request(
        session, at(10), "What's the weather in Paris?", "I can only help with questions about our store.",
        cited=False, guard={attr.GUARD_SCOPE_DECLINED: True},
    )  # fmt: skip
    t.uncited = request(session, at(9), "Can I change my delivery address after ordering?", cited=False)
    t.slow = request(session, at(8), "Do you price match?", latency_ms=9000.0)
    t.in_set = request(session, at(7), IN_SET_QUESTION, None, error=True)
    t.eval_error = request(session, at(6), "Why did this eval case fail?", None, error=True, eval_run_id="r1")
    t.no_question = request(session, at(5), None, None, error=True)
    # an old failure, outside a one-day window
    request(session, now - timedelta(days=3), "Is there a store in Berlin?", None, error=True)
    session.flush()
    return t


def document_upload(session: Session, start: datetime, *, latency_ms: float, error: bool) -> str:
    """A knowledge-base upload as the reference service traces it: one ``documents.upsert`` span."""
    trace_id = _hex(32)
    session.add(
        Span(
            trace_id=trace_id,
            span_id=_hex(16),
            parent_span_id=None,
            name="documents.upsert",
            kind=1,
            start_time=start,
            end_time=start + timedelta(milliseconds=latency_ms),
            duration_ms=latency_ms,
            status_code=2 if error else 1,
            events=[],
            resource={attr.SERVICE_NAME: "evallens-service"},
            attributes={attr.KB_DOCUMENT_ID: "returns-policy", attr.KB_NUM_CHUNKS_EMBEDDED: 12},
        )  # fmt: skip
    )
    session.flush()
    return trace_id


def content_events(session: Session, trace_id: str, span_id: str, at: datetime, question: str) -> None:
    """The question and a good answer of a chat span sent as GenAI content log events."""
    for direction, role, text in (("input", "user", question), ("output", "assistant", GOOD_ANSWER)):
        session.execute(
            insert(GenAIContent).values(
                project="default",
                trace_id=trace_id,
                span_id=span_id,
                time=at,
                event_name=f"gen_ai.{role}.message",
                direction=direction,
                messages=[{"role": role, "content": text}],
                digest=f"{direction}-{trace_id}",
            )  # fmt: skip
        )
    session.flush()


def request_with_content_events(
    session: Session, start: datetime, question: str, *, events_first: bool
) -> str:
    """A failed chat request whose question and answer arrive only as content log events, before or
    after its spans."""
    trace_id = f"{next(_ids):x}".rjust(32, "c")
    root_id = _hex(16)
    if events_first:
        content_events(session, trace_id, root_id, start, question)
    session.add(
        Span(
            trace_id=trace_id,
            span_id=root_id,
            parent_span_id=None,
            name="chat gpt-4o",
            kind=3,
            start_time=start,
            end_time=start + timedelta(milliseconds=300),
            duration_ms=300.0,
            status_code=2,
            events=[],
            resource={attr.SERVICE_NAME: "shop-bot"},
            attributes={attr.GEN_AI_REQUEST_MODEL: "gpt-4o"},
        )  # fmt: skip
    )
    session.flush()
    if not events_first:
        content_events(session, trace_id, root_id, start, question)
    return trace_id
