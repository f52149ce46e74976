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
    bad: Sequence[BadTrace], known_questions: Sequence[str], embed: Embed, threshold: float
) -> tuple[list[Cluster], int]:
    """Clusters of ``bad`` (worst first) without questions near ``known_questions``; and how many
    traces were dropped as already in a set."""
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
            clusters.append(Cluster([item]))  # nothing to compare: never merged
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
