"""Each project's knowledge base alone: retrieval (both legs, reranking), chunk ids and the per-project
BM25 index, through upserts, deletes and a fresh process (real PostgreSQL, the real embedder)."""

from sqlalchemy.orm import Session, sessionmaker

from evallens.service.documents import DocumentIn, DocumentService
from evallens.service.rag import HybridRetriever, KeywordIndex
from evallens.service.rag.types import RetrievalResult
from evallens.settings import RagSettings
from tests.evallens.service.conftest import RecordingEmbedder

TOASTER = DocumentIn(
    id="toaster",
    title="Toaster",
    text="# Toaster\n\nThe TR-4410 toaster carries a three year warranty covering the heating coils.",
)
KETTLE = DocumentIn(
    id="kettle",
    title="Kettle",
    text="# Kettle\n\nThe KT-200 kettle boils a litre of water in ninety seconds.",
)
QUESTION = "What warranty does the TR-4410 toaster carry?"


def every_id(result: RetrievalResult) -> set[str]:
    """Every chunk id any stage saw: both legs, the fusion and the chunks handed to the prompt."""
    hits = [*result.vector_hits, *result.keyword_hits, *result.fused]
    return {hit.id for hit in hits} | set(result.chunk_ids)


def test_retrieval_sees_only_its_projects_chunks_through_changes_and_restarts(
    rag_settings: RagSettings,
    embedder: RecordingEmbedder,
    session_factory: sessionmaker[Session],
    document_service: DocumentService,
    keyword_index: KeywordIndex,
) -> None:
    retriever = HybridRetriever(
        rag_settings, embedder=embedder, session_factory=session_factory, keyword_index=keyword_index
    )
    document_service.upsert_sync("shop-a", TOASTER)
    document_service.upsert_sync("shop-b", KETTLE)
    a_result = retriever.retrieve_sync(QUESTION, project="shop-a")
    b_result = retriever.retrieve_sync(QUESTION, project="shop-b")
    assert a_result.document_ids == ["toaster"] and a_result.keyword_hits
    a_ids = every_id(a_result)
    assert b_result.document_ids == ["kettle"] and not every_id(b_result) & a_ids
    assert not b_result.keyword_hits  # B's own index has no "tr-4410"; A's was never searched

    same = document_service.upsert_sync("shop-b", TOASTER)  # the same text under the same id in B
    assert (same.status, same.num_chunks_embedded) == ("created", 1)
    b_result = retriever.retrieve_sync(QUESTION, project="shop-b")
    assert b_result.document_ids[0] == "toaster" and b_result.keyword_hits  # B's index was rebuilt
    assert not every_id(b_result) & a_ids  # B's copy has chunk ids of its own

    assert document_service.delete_sync("shop-a", "toaster").deleted
    a_result = retriever.retrieve_sync(QUESTION, project="shop-a")
    assert a_result.chunks == [] and a_result.keyword_hits == []
    assert retriever.retrieve_sync(QUESTION, project="shop-b").document_ids[0] == "toaster"

    restarted = HybridRetriever(
        rag_settings, embedder=embedder, session_factory=session_factory, keyword_index=KeywordIndex()
    )
    restarted.warm_up()  # builds every project's BM25 index from PostgreSQL
    assert restarted.keyword_index.num_chunks("shop-b") == 2
    assert restarted.keyword_index.num_chunks("shop-a") == 0
    assert restarted.retrieve_sync(QUESTION, project="shop-a").chunks == []
    assert restarted.retrieve_sync(QUESTION, project="shop-b").keyword_hits
