"""Rank and deduplicate bad production traces into candidate cases (``mine_cases``)."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from evallens.cases._redact import redact
from evallens.cases.mining._query import flagged_traces
from evallens.cases.mining._vectors import QuestionVectors
from evallens.cases.mining.dedupe import Cluster, Embed, collapse, normalize
from evallens.cases.mining.signals import judge
from evallens.db.models import EvalCase, EvalSet
from evallens.progress import NO_PROGRESS, ProgressReporter, phase
from evallens.settings import CasesSettings
from evallens.telemetry.messages import question_from_attribute


@dataclass(frozen=True)
class Readers:
    """What mining needs read from text and cannot do in SQL, lent by the caller: whether an answer
    refuses or declines (the eval engine's grammar) and unit-length question embeddings (MiniLM).

    With ``embedding_model`` (what names the model and its weights), the vectors ``embed`` gives
    (float32 rows) are stored in ``question_embeddings`` and no text is embedded twice; without it
    nothing is stored."""

    refuses_or_declines: Callable[[str], bool]
    embed: Embed
    embedding_model: str | None = None


class Candidate(BaseModel):
    """One candidate bad case: a question and the traces that asked it (texts redacted for display)."""

    trace_id: str
    trace_ids: list[str]
    count: int
    score: float
    reasons: list[str]
    question: str | None
    question_redactions: list[str] = Field(default_factory=list, description="kinds of data redacted")
    answer: str | None
    feedback_score: float | None
    feedback_comment: str | None
    latency_ms: float
    cost_usd: float | None
    start_time: datetime


class MiningReport(BaseModel):
    """Candidates, worst first, and what the window held."""

    since: datetime
    num_traces: int
    num_flagged: int
    num_already_in_sets: int
    candidates: list[Candidate]


def mine_cases(
    session: Session,
    settings: CasesSettings,
    readers: Readers,
    *,
    project: str,
    since: timedelta,
    limit: int,
    now: datetime | None = None,
    progress: ProgressReporter = NO_PROGRESS,
) -> MiningReport:
    """Candidate bad cases from ``project``'s production traffic in the last ``since``, worst ``limit``
    first (questions and answers redacted). Stores the questions' new embeddings in ``session``: the
    caller commits them."""
    start = (now or datetime.now(UTC)) - since
    stored = QuestionVectors(session, readers.embedding_model) if readers.embedding_model else None
    with phase(progress, "reading production traces"), ThreadPoolExecutor(1) as pool:
        known_traces, known_questions = known_cases(session, project)
        known_texts = sorted({normalize(question) for question in known_questions})
        ahead = stored.load(known_texts) if stored else {}
        # the sets' other questions are embedded on another core while PostgreSQL reads the window
        unstored = [text for text in known_texts if text not in ahead]
        known_vectors = pool.submit(readers.embed, unstored) if unstored else None
        facts, num_traces = flagged_traces(
            session,
            project,
            start,
            min_traces=settings.cases_min_traces_for_outliers,
            max_traces=settings.cases_max_traces,
        )
        if known_vectors is not None:
            ahead.update(_remembered(stored, unstored, known_vectors.result()))
        embed = _embedding_ahead(readers.embed, stored, ahead)
    judged = []
    with phase(progress, f"judging {len(facts)} flagged traces", len(facts)):
        for item in facts:
            judged.append(judge(item, readers.refuses_or_declines))
            progress.advance()
    bad = [item for item in judged if item is not None and item.facts.trace_id not in known_traces]
    with phase(progress, f"merging {len(bad)} bad cases with near-duplicate questions"):
        clusters, num_known = collapse(
            bad,
            known_questions,
            embed,
            settings.cases_duplicate_similarity,
            settings.cases_max_embedded_questions,
        )
    if stored:
        stored.save()
    return MiningReport(
        since=start,
        num_traces=num_traces,
        num_flagged=len(bad),
        num_already_in_sets=num_known + sum(1 for item in facts if item.trace_id in known_traces),
        candidates=[_candidate(cluster) for cluster in clusters[:limit]],
    )


def known_cases(session: Session, project: str) -> tuple[set[str], list[str]]:
    """Source traces and questions of every case (any status) in the latest version of each set."""
    latest = (
        select(EvalSet.name, func.max(EvalSet.version).label("version"))
        .where(EvalSet.project == project)
        .group_by(EvalSet.name)
        .subquery()
    )
    rows = session.execute(
        select(EvalCase.source_trace_id, EvalCase.question, EvalCase.messages)
        .join(EvalSet, EvalSet.id == EvalCase.eval_set_id)
        .join(latest, (latest.c.name == EvalSet.name) & (latest.c.version == EvalSet.version))
        .where(EvalSet.project == project)
    ).all()
    traces = {trace_id for trace_id, _, _ in rows if trace_id}
    questions = [question or question_from_attribute(messages) or "" for _, question, messages in rows]
    return traces, [question for question in questions if question]


def _embedding_ahead(embed: Embed, stored: QuestionVectors | None, ahead: dict[str, np.ndarray]) -> Embed:
    """``embed``, answering from ``ahead`` (embedded ahead) and ``stored`` first: it embeds only the rest."""

    def embed_rest(wanted: list[str]) -> np.ndarray:
        found = {text: ahead[text] for text in wanted if text in ahead}
        rest = [text for text in wanted if text not in found]
        if rest and stored:
            found.update(stored.load(rest))  # one query for every text not embedded ahead
            rest = [text for text in rest if text not in found]
        if rest:
            found.update(_remembered(stored, rest, embed(rest)))
        return np.stack([found[text] for text in wanted])

    return embed_rest


def _remembered(
    stored: QuestionVectors | None, texts: list[str], vectors: np.ndarray
) -> dict[str, np.ndarray]:
    """``texts`` -> their fresh ``vectors``, kept for ``stored`` to save."""
    fresh = dict(zip(texts, vectors, strict=True))
    if stored:
        stored.add(fresh)
    return fresh


def _candidate(cluster: Cluster) -> Candidate:
    head = cluster.members[0]
    reasons = list(dict.fromkeys(reason for member in cluster.members for reason in member.reasons))
    question = redact(head.question) if head.question else None
    return Candidate(
        trace_id=head.facts.trace_id,
        trace_ids=[member.facts.trace_id for member in cluster.members],
        count=len(cluster.members),
        score=cluster.score,
        reasons=reasons,
        question=question.text if question else None,
        question_redactions=[redaction.kind for redaction in question.redactions] if question else [],
        answer=redact(head.answer).text if head.answer else None,
        feedback_score=head.facts.feedback_score,
        feedback_comment=redact(comment).text if (comment := head.facts.feedback_comment) else None,
        latency_ms=head.facts.latency_ms,
        cost_usd=head.facts.cost_usd,
        start_time=head.facts.start_time,
    )
