"""Chunking along headings and paragraphs, in the embedding model's tokens, with overlap."""

from evallens.service.rag import chunk_document
from evallens.service.rag.chunking import split_sentences
from tests.evallens.service.conftest import RecordingEmbedder

DOCUMENT = f"""# Trailhead 45 Backpack

## Overview
Model TR-4410 is a 45 litre hiking pack.

It has a rain cover in the lid pocket.

## Long section
{" ".join(f"Sentence {n}: the pack passed lab test {n} with a load of {n + 10} kg." for n in range(40))}

## Care
Hand wash only.
"""


def test_chunks_follow_headings_and_carry_their_heading_path(embedder: RecordingEmbedder) -> None:
    chunks = chunk_document(
        "tr", DOCUMENT, count_tokens=embedder.count_tokens, chunk_tokens=128, overlap=0.12
    )
    assert chunks[0].text.startswith("Trailhead 45 Backpack > Overview\n")
    assert "Model TR-4410" in chunks[0].text and "rain cover" in chunks[0].text
    assert "\n\n" in chunks[0].text  # two paragraphs of one section share a chunk
    assert chunks[-1].text == "Trailhead 45 Backpack > Care\nHand wash only."
    long_chunks = [c for c in chunks if c.text.startswith("Trailhead 45 Backpack > Long section")]
    assert len(long_chunks) > 3
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_chunks_stay_within_the_token_limit(embedder: RecordingEmbedder) -> None:
    chunks = chunk_document(
        "tr", DOCUMENT, count_tokens=embedder.count_tokens, chunk_tokens=128, overlap=0.12
    )
    for chunk in chunks:
        assert chunk.num_tokens == embedder.count_tokens(chunk.text)
        assert chunk.num_tokens <= 128


def shared_words(previous: str, following: str) -> str:
    """The longest run of words that ends ``previous`` and starts ``following``."""
    before, after = previous.split(), following.split()
    for size in range(min(len(before), len(after)), 0, -1):
        if before[-size:] == after[:size]:
            return " ".join(after[:size])
    return ""


def test_consecutive_chunks_of_a_long_paragraph_overlap_by_about_the_setting(
    embedder: RecordingEmbedder,
) -> None:
    chunks = chunk_document(
        "tr", DOCUMENT, count_tokens=embedder.count_tokens, chunk_tokens=128, overlap=0.12
    )
    long_chunks = [c for c in chunks if c.text.startswith("Trailhead 45 Backpack > Long section")]
    for previous, following in zip(long_chunks, long_chunks[1:], strict=False):
        shared = shared_words(previous.text.partition("\n")[2], following.text.partition("\n")[2])
        assert 0 < embedder.count_tokens(shared) <= round(128 * 0.12)


def test_without_overlap_no_sentence_repeats(embedder: RecordingEmbedder) -> None:
    chunks = chunk_document("tr", DOCUMENT, count_tokens=embedder.count_tokens, chunk_tokens=128, overlap=0.0)
    bodies = [split_sentences(c.text.partition("\n")[2]) for c in chunks]
    numbered = [s for body in bodies for s in body if s.startswith("Sentence ")]
    assert len(numbered) == len(set(numbered)) == 40
    assert all(c.num_tokens <= 128 for c in chunks)


def test_a_single_huge_sentence_is_split_by_words(embedder: RecordingEmbedder) -> None:
    text = "# T\n\n" + " ".join(["warranty"] * 600)
    chunks = chunk_document("t", text, count_tokens=embedder.count_tokens, chunk_tokens=64, overlap=0.1)
    assert len(chunks) >= 10
    assert all(c.num_tokens <= 64 for c in chunks)


def test_chunk_ids_are_stable_content_hashes(embedder: RecordingEmbedder) -> None:
    def chunk(text: str, document_id: str = "tr"):
        return chunk_document(
            document_id, text, count_tokens=embedder.count_tokens, chunk_tokens=128, overlap=0.12
        )

    first, again = chunk(DOCUMENT), chunk(DOCUMENT)
    assert [c.id for c in first] == [c.id for c in again]
    changed = chunk(DOCUMENT.replace("Hand wash only.", "Machine wash cold."))
    assert [c.id for c in changed[:-1]] == [c.id for c in first[:-1]]
    assert changed[-1].id != first[-1].id
    assert {c.id for c in chunk(DOCUMENT, "other")}.isdisjoint(c.id for c in first)


# Chinese writes no spaces between words and none after its sentence ends (。！？).
REFUNDS_ZH = "退款会在我们收到退货后的五到十个工作日内退回您的银行卡。礼品卡的退款会立即到账！"


def test_text_without_spaces_is_split_at_its_sentence_ends_within_the_token_limit(
    embedder: RecordingEmbedder,
) -> None:
    """Chunking split long paragraphs only at a full stop followed by a space and a capital, then at
    spaces: a Chinese paragraph (or any text without spaces) stayed one chunk however long, far over
    the limit, and the embedding model read only its first tokens."""
    paragraph = REFUNDS_ZH * 30
    chunks = chunk_document(
        "zh", f"# 退款\n\n{paragraph}", count_tokens=embedder.count_tokens, chunk_tokens=64, overlap=0.0
    )
    assert len(chunks) > 10
    assert all(chunk.num_tokens <= 64 for chunk in chunks)
    bodies = [chunk.text.partition("\n")[2] for chunk in chunks]
    assert all(body.endswith(("。", "！")) for body in bodies)
    assert "".join(body.replace(" ", "") for body in bodies) == paragraph  # nothing lost, nothing twice
    end = REFUNDS_ZH.index("。") + 1
    assert split_sentences(REFUNDS_ZH) == [REFUNDS_ZH[:end], REFUNDS_ZH[end:]]
    one_sentence = REFUNDS_ZH.replace("。", "，").replace("！", "，") * 20  # no sentence end to split at
    pieces = chunk_document(
        "zh", one_sentence, count_tokens=embedder.count_tokens, chunk_tokens=64, overlap=0.1
    )
    assert len(pieces) > 10 and all(piece.num_tokens <= 64 for piece in pieces)
    assert "".join(piece.text for piece in pieces) == one_sentence
