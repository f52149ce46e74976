"""Reciprocal Rank Fusion, score(d) = sum over rankings of 1 / (k + rank(d)), ranks from 1; and the rules
of the top k: each leg's best hit stays in it, and one document holds at most a few of its places.

Why the rule: RRF rewards agreement. With k = 60 and legs of 50 chunks, any chunk both legs return
(at least 2 / 110) outranks the best chunk of one leg alone (1 / 61), and the cosine reranker reads the
vector leg's own embeddings. So a chunk only the keyword leg can see, one holding an exact model number
or error code the embedding model cannot tell apart, would fall out of the top k in hybrid mode, and
through the reranker even in keyword-only mode; the best hit of each leg is what running two legs is for.

Why a cap per document can help, and why there is none by default: every chunk of a document starts
with its title and shares its topic, so one document's chunks can fill the top k (5 of 5 for some demo
questions) and push out another document the question needs; on the demo corpus a cap of 2 raised
document recall@5 by one question. But the fact a question needs is often in a third section of the
right document: with the cap, the top 5 held every required fact of 2-4 fewer questions in every mode,
and the demo's answers leaned against it (README). The cap stays a setting for corpora of long documents.
"""

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

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


def top_k_keeping(
    ranked: Sequence[ScoredId],
    keep: Collection[str],
    top_k: int,
    *,
    document_of: Mapping[str, str] | None = None,
    max_per_document: int = 0,
) -> list[ScoredId]:
    """The best ``top_k`` of ``ranked`` with the ids in ``keep`` (each leg's best hit) among them: one ranked
    lower takes the place of the lowest other hit. With ``max_per_document`` (``document_of`` maps ids to
    documents) no document takes more places than that unless too few other documents are ranked (a kept
    hit counts, and always stays). The order stays that of ``ranked``."""
    kept = [hit.id for hit in ranked if hit.id in keep][:top_k]
    others = [hit.id for hit in ranked if hit.id not in keep]
    if max_per_document and document_of is not None:
        others = _within_cap_first(kept, others, document_of, max_per_document)
    selected = {*kept, *others[: top_k - len(kept)]}
    return [hit for hit in ranked if hit.id in selected]


def _within_cap_first(
    kept: Sequence[str], others: Sequence[str], document_of: Mapping[str, str], cap: int
) -> list[str]:
    """``others`` with those that keep their document within ``cap`` places (``kept`` counted) first, each
    part in rank order."""
    places = Counter(document_of[item_id] for item_id in kept)
    within: list[str] = []
    beyond: list[str] = []
    for item_id in others:
        document = document_of[item_id]
        if places[document] < cap:
            places[document] += 1
            within.append(item_id)
        else:
            beyond.append(item_id)
    return within + beyond
