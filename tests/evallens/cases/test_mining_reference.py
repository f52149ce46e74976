"""``mine_cases`` (summaries, the production index, the SQL pre-filter, questions embedded ahead) lists
exactly what the documented algorithm gives when it is run on every span of the window in Python."""

import json
import random
import zlib
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from evallens.cases.mining import Readers, known_cases, mine_cases
from evallens.cases.mining._query import TraceFacts
from evallens.cases.mining.dedupe import collapse
from evallens.cases.mining.mine import Candidate, _candidate
from evallens.cases.mining.signals import judge
from evallens.db.partitions import create_span_partitions
from evallens.settings import CasesSettings
from evallens.telemetry import attributes as attr
from evals.readers import refuses_or_declines
from evals.sets.sync import sync_path
from tests.evallens.cases.traffic import (
    IN_SET_QUESTION,
    content_events,
    document_upload,
    feedback,
    request,
)
from tests.evals.conftest import SETS

TOPICS = ["return", "ship", "size", "pay", "warranty", "store", "gift", "track"]
QUESTIONS = [
    *(f"How do I {verb} my {topic} order?" for topic in TOPICS for verb in ("check", "change")),
    *(f"how do i check my {topic} order" for topic in TOPICS[:3]),  # the same question, written otherwise
    IN_SET_QUESTION,
]
ANSWERS = ["You can do that online.", "I'm sorry, I don't know.", "Sorry for the wait: it ships today.", None]


def topic_embed(texts: list[str]) -> np.ndarray:
    """Unit vectors by topic word with a little per-text noise: same topic, similarity ~0.9+."""
    rows = []
    for question in texts:
        topic = next((index for index, word in enumerate(TOPICS) if word in question), len(TOPICS))
        vector = np.zeros(len(TOPICS) + 9)
        vector[topic] = 1.0
        vector[len(TOPICS) + 1 + zlib.crc32(question.encode()) % 8] = 0.3
        rows.append(vector / np.linalg.norm(vector))
    return np.array(rows, dtype=np.float32)


def seed(session: Session, rng: random.Random, now: datetime) -> None:
    """Chat requests with every signal drawn at random, feedback, uploads, eval traffic, old traffic."""
    sync_path(session, SETS / "good")
    traces = []
    for number in range(160):
        start = now - timedelta(minutes=rng.uniform(1, 600), days=rng.choice([0, 0, 0, 0, 3]))
        question = rng.choice(QUESTIONS) if rng.random() < 0.9 else None
        root: dict[str, Any] = {}
        for name, chance in ((attr.DEGRADED, 0.08), (attr.TIMEOUT, 0.05)):
            if rng.random() < chance:
                root[name] = True
        if rng.random() < 0.05:
            root[attr.FEEDBACK_SCORE] = rng.choice([-1.0, -0.5, 1.0])
        trace_id = request(
            session, start, question, rng.choice(ANSWERS),
            latency_ms=rng.lognormvariate(6, 0.6), error=rng.random() < 0.1, cited=rng.random() < 0.8,
            root=root, guard={attr.GUARD_SCOPE_DECLINED: rng.random() < 0.1},
            eval_run_id="run-1" if rng.random() < 0.1 else None,
        )  # fmt: skip
        traces.append((trace_id, start))
        if question is None and rng.random() < 0.5:  # asked through content log events instead
            content_events(session, trace_id, f"{number:016x}", start, rng.choice(QUESTIONS))
    for trace_id, start in rng.sample(traces, 25):
        feedback(session, start + timedelta(seconds=30), trace_id, rng.choice([-1.0, -0.5, 1.0]), "not that")
    for minute in range(3):
        document_upload(session, now - timedelta(minutes=minute * 7), latency_ms=20_000.0, error=True)
    session.flush()


def reference(session: Session, settings: CasesSettings, since: datetime) -> tuple[Any, ...]:
    """The documented algorithm on every span and content event of the project, in Python: the window's
    production traces, bad traces, traces dropped as known and every candidate, worst first."""
    spans = session.execute(
        text(
            "SELECT trace_id, name, parent_span_id, start_time, end_time, duration_ms, status_code,"
            " attributes, cost_usd, eval_run_id FROM spans WHERE project = 'default'"
        )
    ).mappings()
    by_trace: dict[str, list[Any]] = defaultdict(list)
    for span in spans:
        by_trace[span["trace_id"]].append(span)
    events: dict[str, dict[str, Any]] = defaultdict(dict)
    for row in session.execute(text("SELECT trace_id, direction, messages FROM genai_content")).mappings():
        events[row["trace_id"]][row["direction"]] = row["messages"]
    ratings: dict[str, list[tuple[float, str | None]]] = defaultdict(list)
    for found in by_trace.values():
        for span in found:
            target = span["attributes"].get(attr.FEEDBACK_TARGET_TRACE_ID)
            if target and min(s["start_time"] for s in found) >= since:
                ratings[target].append(
                    (span["attributes"][attr.FEEDBACK_SCORE], span["attributes"].get(attr.FEEDBACK_COMMENT))
                )
    production = {}
    for trace_id, found in by_trace.items():
        every = {key: value for span in found for key, value in span["attributes"].items()}
        roots = [span["duration_ms"] for span in found if span["parent_span_id"] is None]
        asked = attr.GEN_AI_INPUT_MESSAGES in every or "input" in events[trace_id]
        if (
            asked and roots and min(s["start_time"] for s in found) >= since
            and not any(s["eval_run_id"] for s in found) and attr.FEEDBACK_TARGET_TRACE_ID not in every
        ):  # fmt: skip
            production[trace_id] = (found, max(roots), every)
    latencies = [latency for _, latency, _ in production.values()]
    costs = {
        t: sum(s["cost_usd"] for s in f if s["cost_usd"] is not None) for t, (f, _, _) in production.items()
    }
    enough = len(production) >= settings.cases_min_traces_for_outliers
    latency_p50, latency_p95 = np.percentile(latencies, [50, 95])
    cost_p50, cost_p95 = np.percentile(list(costs.values()), [50, 95])
    facts = []
    for trace_id, (found, latency, every) in production.items():
        first = min(found, key=lambda span: span["start_time"])
        chunks = every.get(attr.RETRIEVAL_CHUNK_IDS) or []
        documents = json.loads(every.get(attr.GEN_AI_RETRIEVAL_DOCUMENTS, "[]"))
        guarded = bool(every.get(attr.GUARD_SCOPE_DECLINED))
        rated = min(ratings[trace_id], default=(None, None), key=lambda pair: pair[0])
        own = every.get(attr.FEEDBACK_SCORE)
        feedback_score = min((s for s in (own, rated[0]) if s is not None), default=None)
        facts.append(
            TraceFacts(
                trace_id=trace_id,
                start_time=first["start_time"],
                latency_ms=latency,
                cost_usd=costs[trace_id],
                error=any(s["status_code"] == 2 for s in found),
                degraded=bool(every.get(attr.DEGRADED)),
                timeout=bool(every.get(attr.TIMEOUT)),
                guarded=guarded,
                no_citations=not chunks and not documents and not guarded,
                latency_outlier=enough and latency > max(latency_p95, 2 * latency_p50),
                cost_outlier=enough and costs[trace_id] > max(cost_p95, 2 * cost_p50),
                feedback_score=feedback_score,
                feedback_comment=rated[1],
                question_values=(every.get(attr.GEN_AI_INPUT_MESSAGES), None, events[trace_id].get("input")),
                answer_values=(every.get(attr.GEN_AI_OUTPUT_MESSAGES), None, events[trace_id].get("output")),
            )  # fmt: skip
        )
    known_traces, known_questions = known_cases(session, "default")
    judged = [judge(item, refuses_or_declines) for item in facts]
    bad = [item for item in judged if item is not None and item.facts.trace_id not in known_traces]
    clusters, num_known = collapse(
        bad,
        known_questions,
        topic_embed,
        settings.cases_duplicate_similarity,
        settings.cases_max_embedded_questions,
    )
    return len(production), len(bad), num_known, [_candidate(cluster) for cluster in clusters]


def shown(candidate: Candidate) -> dict[str, Any]:
    found = candidate.model_dump()
    found["cost_usd"] = pytest.approx(found["cost_usd"])  # sums of the same costs in another order
    return found


@pytest.mark.parametrize(("seed_value", "max_embedded", "limit"), [(1, 200, 50), (2, 3, 50), (3, 200, 4)])
def test_mining_equals_the_documented_algorithm_on_every_span(
    sessions: sessionmaker[Session], seed_value: int, max_embedded: int, limit: int
) -> None:
    now = datetime.now(UTC)
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [(now - timedelta(days=d)).date() for d in range(-1, 5)])
        seed(session, random.Random(seed_value), now)
    settings = CasesSettings(cases_max_embedded_questions=max_embedded)
    readers = Readers(refuses_or_declines=refuses_or_declines, embed=topic_embed)
    with sessions() as session:
        report = mine_cases(
            session, settings, readers, project="default", since=timedelta(days=1), limit=limit, now=now
        )
        num_traces, num_bad, num_known, candidates = reference(session, settings, report.since)
    assert (report.num_traces, report.num_flagged, report.num_already_in_sets) == (
        num_traces,
        num_bad,
        num_known,
    )
    assert [shown(candidate) for candidate in report.candidates] == [shown(c) for c in candidates[:limit]]
    assert len(candidates) > 4  # the limit of 4 cuts the list
    assert any(c.count > 1 for c in candidates) and num_known > 0  # merging and known questions at work
