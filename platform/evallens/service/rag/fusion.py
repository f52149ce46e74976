"""Reciprocal Rank Fusion: score(d) = sum over rankings of 1 / (k + rank(d)), ranks from 1."""

from collections.abc import Sequence

from evallens.service.rag.store import ScoredId

DEFAULT_RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = DEFAULT_RRF_K) -> list[ScoredId]:
    """Fuse ranked id lists into one, best first; ties keep the order in which ids were first seen."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item_id in enumerate(ranking, start=1):
            scores[item_id] = scores.get(item_id, 0.0) + 1.0 / (k + rank)
    first_seen = {item_id: position for position, item_id in enumerate(scores)}
    ordered = sorted(scores, key=lambda item_id: (-scores[item_id], first_seen[item_id]))
    return [ScoredId(item_id, scores[item_id]) for item_id in ordered]
