"""Recall: did retrieval find the documents the answer needs?

Applies to cases with at least one reference context id. Score = the share of reference document
ids found among the first ``k`` distinct ids the target cited (``evallens.retrieved_ids``; chunk ids
``<doc-id>#<n>`` count as their document), i.e. recall@k. This is ragas' ID-based context recall
(``IDBasedContextRecall``) restricted to the top k. A failed request scores 0.
"""

from evals.metrics.result import Answer, MetricResult, ScoringContext, not_applicable
from evals.sets.format import CaseSpec


def score(case: CaseSpec, answer: Answer, context: ScoringContext) -> MetricResult:
    """Score one answer for recall@k (a rate in [0, 1]; 1 = every reference document retrieved)."""
    reference = set(case.reference_context_ids)
    if not reference:
        return not_applicable("recall", "no reference context ids")
    if answer.failed:
        return MetricResult("recall", 0.0, False, f"request failed: {answer.error or 'empty answer'}")
    retrieved = set(top_k_documents(answer.retrieved_ids, context.recall_k))
    found = reference & retrieved
    value = len(found) / len(reference)
    missing = sorted(reference - retrieved)
    reason = f"{len(found)}/{len(reference)} retrieved" + (
        f"; missing {', '.join(missing)}" if missing else ""
    )
    return MetricResult("recall", value, value == 1.0, reason)


def document_id(cited_id: str) -> str:
    """The document a cited id belongs to: a chunk id ``<doc-id>#<n>`` maps to ``<doc-id>``."""
    return cited_id.split("#", 1)[0]


def top_k_documents(cited_ids: list[str], k: int) -> list[str]:
    """The first ``k`` distinct document ids in citation order."""
    documents: list[str] = []
    for cited in cited_ids:
        doc = document_id(cited)
        if doc not in documents:
            documents.append(doc)
        if len(documents) == k:
            break
    return documents
