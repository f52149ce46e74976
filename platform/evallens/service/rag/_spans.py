"""Span attributes shared by the RAG stages."""

import json
from collections.abc import Sequence

from opentelemetry.util.types import AttributeValue

from evallens.service.rag.store import ScoredId
from evallens.telemetry import attributes

MAX_LEG_IDS = 50


def documents_attributes(hits: Sequence[ScoredId]) -> dict[str, AttributeValue]:
    """Retrieved documents in GenAI (JSON list) and OpenInference (indexed) form."""
    values: dict[str, AttributeValue] = {
        attributes.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps(
            [{"id": hit.id, "score": round(hit.score, 6)} for hit in hits]
        )
    }
    for index, hit in enumerate(hits):
        values[attributes.retrieval_document_id(index)] = hit.id
        values[attributes.retrieval_document_score(index)] = hit.score
    return values


def leg_attributes(leg: str, hits: Sequence[ScoredId]) -> dict[str, AttributeValue]:
    """One retrieval leg's ranking (ids and scores, capped) for its span."""
    shown = hits[:MAX_LEG_IDS]
    return {
        attributes.RETRIEVAL_LEG: leg,
        attributes.RETRIEVAL_NUM_RESULTS: len(hits),
        attributes.RETRIEVAL_LEG_IDS: [hit.id for hit in shown],
        attributes.RETRIEVAL_LEG_SCORES: [hit.score for hit in shown],
    }
