"""Collapse near-duplicate questions into one candidate, and drop questions a set already holds."""

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from evallens.cases.mining.signals import BadTrace

Embed = Callable[[list[str]], np.ndarray]  # texts -> unit-length rows


@dataclass
class Cluster:
    """Bad traces asking (nearly) the same question; the first is the worst and represents them."""

    members: list[BadTrace] = field(default_factory=list)

    @property
    def score(self) -> float:
        """The worst member's score plus log2 of how often the question failed."""
        return round(self.members[0].score + math.log2(len(self.members)), 3)


def normalize(question: str) -> str:
    """Lower case, single spaces, no trailing punctuation: exact duplicates compare equal."""
    return re.sub(r"\s+", " ", question.lower()).strip().rstrip("?!. ")


def collapse(
    bad: Sequence[BadTrace],
    known_questions: Sequence[str],
    embed: Embed,
    threshold: float,
    max_embedded: int | None = None,
) -> tuple[list[Cluster], int]:
    """Clusters of ``bad`` (worst first) without questions near ``known_questions``; and how many
    traces were dropped as already in a set.

    Only the ``max_embedded`` distinct questions of the worst traces are embedded (all when None):
    embedding is most of a cold mine's time. Traces asking any other question are merged only with
    traces asking the same question (after ``normalize``), and dropped only when a set holds exactly it.
    """
    ordered = sorted(bad, key=lambda item: (-item.score, -item.facts.start_time.timestamp()))
    normalized: dict[str, str] = {}  # a window's traces ask far fewer distinct questions than there are
    for item in ordered:
        if item.question and item.question not in normalized:
            normalized[item.question] = normalize(item.question)
    ranked = list(dict.fromkeys(normalized[item.question] for item in ordered if item.question))
    texts = sorted({*ranked[:max_embedded], *(normalize(q) for q in known_questions)})
    row = {text: index for index, text in enumerate(texts)}
    matrix = embed(texts) if texts else np.zeros((0, 0), np.float32)
    # which distinct questions a set already holds: one matrix product instead of one per trace
    near_known = np.zeros(len(texts), bool)
    if known_questions:
        known = matrix[[row[normalize(q)] for q in known_questions]]
        near_known = (matrix @ known.T).max(axis=1) >= threshold
    clusters: list[Cluster] = []
    heads = np.empty((len(ordered), matrix.shape[1]), matrix.dtype)  # cluster heads' vectors, in order
    head_clusters: list[Cluster] = []
    unembedded: dict[str, Cluster] = {}  # questions beyond ``max_embedded``: merged by their text
    num_known = 0
    for item in ordered:
        if not item.question:
            clusters.append(Cluster([item]))  # nothing to compare: never merged
            continue
        text = normalized[item.question]
        if text not in row:  # never a set's question: those are all embedded
            if text in unembedded:
                unembedded[text].members.append(item)
            else:
                clusters.append(Cluster([item]))
                unembedded[text] = clusters[-1]
            continue
        index = row[text]
        if near_known[index]:
            num_known += 1
            continue
        vector = matrix[index]
        similarities = heads[: len(head_clusters)] @ vector
        best = int(np.argmax(similarities)) if len(head_clusters) else -1
        if best >= 0 and similarities[best] >= threshold:
            head_clusters[best].members.append(item)
        else:
            clusters.append(Cluster([item]))
            heads[len(head_clusters)] = vector
            head_clusters.append(clusters[-1])
    return sorted(clusters, key=lambda cluster: -cluster.score), num_known
