"""Issue 14, finding 6: the length of a question does not set how much text the service embeds."""

from tests.evallens.service.conftest import RecordingEmbedder


def test_the_embedder_reads_a_bounded_part_of_a_query(embedder: RecordingEmbedder) -> None:
    embedder.embedded.clear()
    vector = embedder.embed_one("refund " * 100_000)
    (sent,) = embedder.embedded
    assert len(sent) == embedder.max_query_chars == 2000
    assert vector.shape == (embedder.dimension,)
