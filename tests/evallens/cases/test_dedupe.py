"""``collapse``'s matrix products group and drop exactly the traces its first one-by-one loop did."""

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from evallens.cases.mining._query import TraceFacts
from evallens.cases.mining.dedupe import Cluster, Embed, collapse, normalize
from evallens.cases.mining.signals import BadTrace


def loop_collapse(
    bad: Sequence[BadTrace], known_questions: Sequence[str], embed: Embed, threshold: float
) -> tuple[list[Cluster], int]:
    """The first ``collapse``: one dot product per (trace, cluster head), as the reference."""
    ordered = sorted(bad, key=lambda item: (-item.score, -item.facts.start_time.timestamp()))
    asked = [item for item in ordered if item.question]
    texts = sorted({normalize(q) for q in [*(item.question or "" for item in asked), *known_questions]})
    vectors = dict(zip(texts, embed(texts), strict=True)) if texts else {}
    known = np.array([vectors[normalize(q)] for q in known_questions]) if known_questions else None
    clusters: list[Cluster] = []
    heads: list[tuple[np.ndarray, Cluster]] = []
    num_known = 0
    for item in ordered:
        if not item.question:
            clusters.append(Cluster([item]))
            continue
        vector = vectors[normalize(item.question)]
        if known is not None and float(np.max(known @ vector)) >= threshold:
            num_known += 1
            continue
        similarities = [float(head @ vector) for head, _ in heads]
        best = int(np.argmax(similarities)) if similarities else -1
        if best >= 0 and similarities[best] >= threshold:
            heads[best][1].members.append(item)
        else:
            clusters.append(Cluster([item]))
            heads.append((vector, clusters[-1]))
    return sorted(clusters, key=lambda cluster: -cluster.score), num_known


def random_embed(seed: int, dimensions: int) -> Embed:
    """Unit vectors per text, drawn around a few centres so that many pairs lie near the threshold."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, dimensions))
    drawn: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        for text in texts:
            if text not in drawn:
                vector = centres[rng.integers(len(centres))] + rng.normal(scale=0.6, size=dimensions)
                drawn[text] = (vector / np.linalg.norm(vector)).astype(np.float32)
        return np.stack([drawn[text] for text in texts]) if texts else np.zeros((0, dimensions), np.float32)

    return embed


def bad_trace(number: int, question: str | None, rng: random.Random) -> BadTrace:
    facts = TraceFacts(
        trace_id=f"{number:032x}",
        start_time=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(1000)),
        latency_ms=1.0,
        cost_usd=None,
        error=True,
        degraded=False,
        timeout=False,
        guarded=False,
        no_citations=False,
        latency_outlier=False,
        cost_outlier=False,
        feedback_score=None,
        feedback_comment=None,
        question_values=(),
        answer_values=(),
    )
    return BadTrace(facts, question, "answer", ("error",), rng.choice([1.0, 2.0, 3.0, 4.5]))


def shape(clusters: list[Cluster]) -> list[tuple[list[str], float]]:
    return [([member.facts.trace_id for member in cluster.members], cluster.score) for cluster in clusters]


def random_traffic(rng: random.Random) -> tuple[list[BadTrace], list[str]]:
    """200 bad traces asking 60 questions (some none, some a case variant) and 4 questions of sets."""
    questions = [f"Question {index}?" for index in range(60)]
    bad = [
        bad_trace(number, rng.choice([*questions, None, questions[0].upper()]), rng) for number in range(200)
    ]
    return bad, [*rng.sample(questions, k=3), "held question"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("dimensions", "threshold"), [(3, 0.5), (8, 0.7), (8, 0.85), (16, 0.95)])
def test_matrix_collapse_equals_the_loop_on_random_traces(
    seed: int, dimensions: int, threshold: float
) -> None:
    # few dimensions and many questions: traces often lie near several heads, so the best must win
    rng = random.Random(seed)
    bad, known = random_traffic(rng)
    expected_clusters, expected_known = loop_collapse(bad, known, random_embed(seed, dimensions), threshold)
    clusters, num_known = collapse(bad, known, random_embed(seed, dimensions), threshold)
    assert num_known == expected_known
    assert shape(clusters) == shape(expected_clusters)
    assert sum(len(cluster.members) for cluster in clusters) + num_known == len(bad)


def test_collapse_without_traces_or_known_questions() -> None:
    assert collapse([], [], random_embed(0, 4), 0.85) == ([], 0)
    lone = bad_trace(1, None, random.Random(0))
    assert shape(collapse([lone], [], random_embed(0, 4), 0.85)[0]) == [([lone.facts.trace_id], lone.score)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_embedded", [1, 7, 25, 100])
def test_bounded_collapse_embeds_the_worst_questions_and_merges_the_rest_by_text(
    seed: int, max_embedded: int
) -> None:
    rng = random.Random(seed)
    bad, known = random_traffic(rng)
    embedded: list[str] = []
    draw = random_embed(seed, 8)

    def embed(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return draw(texts)

    clusters, num_known = collapse(bad, known, embed, 0.85, max_embedded)

    ordered = sorted(bad, key=lambda item: (-item.score, -item.facts.start_time.timestamp()))
    worst = list(dict.fromkeys(normalize(item.question) for item in ordered if item.question))[:max_embedded]
    assert sorted(embedded) == sorted({*worst, *map(normalize, known)})  # nothing else is embedded
    # the traces asking an embedded question collapse as they would alone, with every question embedded
    head = [item for item in bad if item.question and normalize(item.question) in embedded]
    expected, expected_known = collapse(head, known, random_embed(seed, 8), 0.85)
    # every other trace merges with the traces asking the very same question, never with others
    rest: dict[str, list[BadTrace]] = {}
    for item in ordered:
        if item not in head:
            rest.setdefault(normalize(item.question) if item.question else item.facts.trace_id, []).append(
                item
            )
    expected += [Cluster(members) for members in rest.values()]
    assert num_known == expected_known
    assert sorted(shape(clusters)) == sorted(shape(expected))
    assert [cluster.score for cluster in clusters] == sorted((c.score for c in clusters), reverse=True)
    if max_embedded >= len(set(worst)) and len(worst) < max_embedded:  # all embedded: as unbounded
        assert shape(clusters) == shape(collapse(bad, known, random_embed(seed, 8), 0.85)[0])
