"""Versioned RAG prompt templates: the system message that grounds an answer in the retrieved chunks."""

from collections.abc import Sequence
from dataclasses import dataclass

from evallens.service.rag.types import RetrievedChunk


@dataclass(frozen=True)
class PromptTemplate:
    """A system prompt for answering with context, one for answering without, and the context layout."""

    version: str
    with_context: str
    without_context: str
    chunk_format: str


TEMPLATES: dict[str, PromptTemplate] = {
    "rag-v1": PromptTemplate(
        version="rag-v1",
        with_context=(
            "You are the customer-service assistant of Acme Home & Outdoor. Answer the customer's question"
            " using only the context below. Quote numbers, model numbers, prices and durations exactly as"
            " they appear. If the context does not contain the answer, say that you do not know and offer"
            " to connect the customer with a human agent. Cite the ids of the context passages you used in"
            " square brackets.\n\nContext:\n{context}"
        ),
        without_context=(
            "You are the customer-service assistant of Acme Home & Outdoor. The knowledge base is not"
            " available right now: answer briefly from general knowledge, say that you could not check"
            " the shop's policies, and offer to connect the customer with a human agent."
        ),
        chunk_format="[{id}] {text}",
    ),
}
DEFAULT_TEMPLATE = "rag-v1"


def get_template(version: str) -> PromptTemplate:
    """The template registered under ``version``."""
    try:
        return TEMPLATES[version]
    except KeyError:
        raise ValueError(f"unknown prompt template {version!r}; known: {', '.join(TEMPLATES)}") from None


def system_message(chunks: Sequence[RetrievedChunk] | None, *, version: str = DEFAULT_TEMPLATE) -> str:
    """The template's system message with the chunks as context (``chunks=None``: retrieval degraded,
    the no-context variant)."""
    template = get_template(version)
    if chunks is None:
        return template.without_context
    context = "\n\n".join(template.chunk_format.format(id=chunk.id, text=chunk.text) for chunk in chunks)
    return template.with_context.format(context=context or "(no passages found)")
