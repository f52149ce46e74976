"""Re-indexing a changed document embeds and writes only its changed chunks (real PostgreSQL)."""

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models.knowledge import Chunk
from evallens.service.documents import DocumentIn, DocumentService
from evallens.telemetry.attributes import DEFAULT_PROJECT
from tests.evallens.service.conftest import RecordingEmbedder

SECTIONS = {
    "Returns": "You can return unopened items within 30 days of delivery for a full refund.",
    "Refunds": "Refunds reach your card within 5 to 10 business days after we receive the item.",
    "Exchanges": "Exchanges for a different size are free within 30 days.",
    "Exceptions": "Gift cards and opened personal-care items cannot be returned.",
}


def render(sections: dict[str, str]) -> str:
    return "# Returns policy\n\n" + "\n\n".join(f"## {name}\n{body}" for name, body in sections.items())


def stored_chunks(session_factory: sessionmaker[Session]) -> dict[str, tuple[int, str]]:
    with session_factory() as session:
        rows = session.execute(select(Chunk.id, Chunk.ordinal, Chunk.text))
        return {row.id: (row.ordinal, row.text) for row in rows}


def test_only_changed_chunks_are_re_embedded(
    document_service: DocumentService,
    embedder: RecordingEmbedder,
    session_factory: sessionmaker[Session],
) -> None:
    embedder.embedded.clear()
    created = document_service.upsert_sync(
        DEFAULT_PROJECT, DocumentIn(id="returns-policy", title="Returns", text=render(SECTIONS))
    )
    assert (created.status, created.num_chunks, created.num_chunks_embedded) == ("created", 4, 4)
    assert len(embedder.embedded) == 4
    before = stored_chunks(session_factory)

    embedder.embedded.clear()
    same = document_service.upsert_sync(
        DEFAULT_PROJECT, DocumentIn(id="returns-policy", title="Returns", text=render(SECTIONS))
    )
    assert (same.status, same.num_chunks_embedded) == ("unchanged", 0)
    assert embedder.embedded == []

    changed = dict(SECTIONS, Refunds="Refunds reach your card within 3 business days after we receive it.")
    updated = document_service.upsert_sync(
        DEFAULT_PROJECT, DocumentIn(id="returns-policy", title="Returns", text=render(changed))
    )
    assert (updated.status, updated.num_chunks_embedded, updated.num_chunks_deleted) == ("updated", 1, 1)
    assert len(embedder.embedded) == 1 and "3 business days" in embedder.embedded[0]
    after = stored_chunks(session_factory)
    assert len(set(before) & set(after)) == 3  # untouched chunks keep their ids (and embeddings)
    assert all(after[chunk_id] == before[chunk_id] for chunk_id in set(before) & set(after))

    # Inserting a section moves later chunks: they are renumbered, not re-embedded.
    embedder.embedded.clear()
    grown = {"Intro": "This policy covers orders shipped in the EU.", **changed}
    moved = document_service.upsert_sync(
        DEFAULT_PROJECT, DocumentIn(id="returns-policy", title="Returns", text=render(grown))
    )
    assert (moved.num_chunks, moved.num_chunks_embedded, moved.num_chunks_deleted) == (5, 1, 0)
    final = stored_chunks(session_factory)
    assert sorted(ordinal for ordinal, _ in final.values()) == [0, 1, 2, 3, 4]
    assert final[next(i for i, (_, t) in final.items() if "Intro" in t)][0] == 0


def test_deleting_a_document_removes_its_chunks(
    document_service: DocumentService, session_factory: sessionmaker[Session]
) -> None:
    document_service.upsert_sync(DEFAULT_PROJECT, DocumentIn(id="a", text=render(SECTIONS)))
    document_service.upsert_sync(DEFAULT_PROJECT, DocumentIn(id="b", text="# B\n\nOnly one paragraph."))
    assert document_service.delete_sync(DEFAULT_PROJECT, "a").deleted
    assert not document_service.delete_sync(DEFAULT_PROJECT, "a").deleted
    assert [text for _, text in stored_chunks(session_factory).values()] == ["B\nOnly one paragraph."]
    assert [doc.id for doc in document_service.list_sync(DEFAULT_PROJECT).data] == ["b"]
