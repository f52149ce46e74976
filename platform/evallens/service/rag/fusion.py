"""Reciprocal Rank Fusion, score(d) = sum over rankings of 1 / (k + rank(d)), ranks from 1; and the rule
that keeps each leg's best hit in the top k.

Why the rule: RRF rewards agreement. With k = 60 and legs of 50 chunks, any chunk both legs return
(at least 2 / 110) outranks the best chunk of one leg alone (1 / 61), and the cosine reranker reads the
vector leg's own embeddings. So a chunk only the keyword leg can see, one holding an exact model number
or error code the embedding model cannot tell apart, would fall out of the top k in hybrid mode, and
through the reranker even in keyword-only mode; the best hit of each leg is what running two legs is for.
"""

from collections.abc import Collection, Sequence

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


def top_k_keeping(ranked: Sequence[ScoredId], keep: Collection[str], top_k: int) -> list[ScoredId]:
    """The best ``top_k`` of ``ranked`` with the ids in ``keep`` (each leg's best hit) among them: one ranked
    lower takes the place of the lowest other hit. The order stays that of ``ranked``."""
    kept = [hit.id for hit in ranked if hit.id in keep][:top_k]
    others = [hit.id for hit in ranked if hit.id not in keep][: top_k - len(kept)]
    selected = {*kept, *others}
    return [hit for hit in ranked if hit.id in selected]
