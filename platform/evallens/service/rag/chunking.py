"""Chunking along a document's own structure: headings, then paragraphs, then sentences.

Limits are in the embedding model's tokens. Consecutive chunks of one section share a tail of
whole sentences (``overlap`` of ``chunk_tokens``). Each chunk starts with its heading path
("Title > Section") so it stays meaningful on its own. Chunk ids hash the project, the document id
and the chunk text, so unchanged text keeps its id (and its embedding) when a document is re-indexed,
and the same text in two projects has two ids.
"""

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from evallens.telemetry.attributes import DEFAULT_PROJECT

TokenCounter = Callable[[str], int]

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# A full stop, then a space and a capital; or a Chinese/Japanese one (。！？), which needs no space after
# it (unless a closing quote or bracket follows: that belongs to the sentence it ends).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[。！？])(?![」』”’）])\s*")
MIN_BODY_TOKENS = 16
# A window of text without spaces is at most this many characters per token of its budget (long enough
# for any tokenizer's text; a shorter window is still a valid one).
MAX_CHARS_PER_TOKEN = 8


@dataclass(frozen=True)
class TextChunk:
    """One chunk of a document: stable id, position, text (with heading path) and token count."""

    id: str
    ordinal: int
    text: str
    num_tokens: int


@dataclass
class _Section:
    heading_path: list[str]
    paragraphs: list[str]


@dataclass(frozen=True)
class _Unit:
    text: str
    num_tokens: int
    paragraph: int


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (a simple rule: end punctuation followed by a capital or digit, or a CJK
    full stop)."""
    return [part.strip() for part in _SENTENCE_END.split(text.strip()) if part.strip()]


def chunk_id(document_id: str, text: str, occurrence: int = 0, project: str = DEFAULT_PROJECT) -> str:
    """Stable content hash of a chunk; ``occurrence`` separates repeated identical text in a document."""
    key = f"{document_id}\n{occurrence}\n{text}"
    if project != DEFAULT_PROJECT:
        # The default project keeps the ids its chunks were stored under before projects had a
        # knowledge base of their own (their embeddings stay); a NUL, which no document id holds,
        # keeps every other project's key apart from them.
        key = f"{project}\x00{key}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _sections(text: str) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = _Section([], [])
    block: list[str] = []

    def close_block() -> None:
        if block:
            current.paragraphs.append(" ".join(line.strip() for line in block))
            block.clear()

    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            close_block()
            if current.paragraphs:
                sections.append(current)
            level = len(heading.group(1))
            stack = [(lvl, name) for lvl, name in stack if lvl < level] + [(level, heading.group(2))]
            current = _Section([name for _, name in stack], [])
        elif line.strip():
            block.append(line)
        else:
            close_block()
    close_block()
    if current.paragraphs:
        sections.append(current)
    return sections


def _word_windows(text: str, budget: int, count_tokens: TokenCounter) -> list[str]:
    windows: list[str] = []
    words: list[str] = []
    used = 0
    for word in text.split():
        cost = count_tokens(word)
        if cost > budget:  # no space to split at (Chinese, a long number): cut it where the budget ends
            if words:
                windows.append(" ".join(words))
                words, used = [], 0
            windows.extend(_cut(word, budget, count_tokens))
            continue
        if words and used + cost > budget:
            windows.append(" ".join(words))
            words, used = [], 0
        words.append(word)
        used += cost
    if words:
        windows.append(" ".join(words))
    return windows


def _cut(text: str, budget: int, count_tokens: TokenCounter) -> list[str]:
    """``text`` cut into the longest pieces (by a binary search) of at most ``budget`` tokens."""
    pieces: list[str] = []
    while text:
        low, high = 1, min(len(text), budget * MAX_CHARS_PER_TOKEN)
        while low < high:
            middle = (low + high + 1) // 2
            if count_tokens(text[:middle]) <= budget:
                low = middle
            else:
                high = middle - 1
        pieces.append(text[:low])
        text = text[low:]
    return pieces


def _units(paragraphs: list[str], budget: int, count_tokens: TokenCounter) -> list[_Unit]:
    units: list[_Unit] = []
    for index, paragraph in enumerate(paragraphs):
        num_tokens = count_tokens(paragraph)
        if num_tokens <= budget:
            units.append(_Unit(paragraph, num_tokens, index))
            continue
        for sentence in split_sentences(paragraph):
            sentence_tokens = count_tokens(sentence)
            pieces = (
                [sentence] if sentence_tokens <= budget else _word_windows(sentence, budget, count_tokens)
            )
            units.extend(_Unit(piece, count_tokens(piece), index) for piece in pieces)
    return units


def _join(units: list[_Unit]) -> str:
    parts: list[str] = []
    for position, unit in enumerate(units):
        if position:
            parts.append(" " if units[position - 1].paragraph == unit.paragraph else "\n\n")
        parts.append(unit.text)
    return "".join(parts)


def _overlap_tail(units: list[_Unit], overlap_tokens: int, count_tokens: TokenCounter) -> list[_Unit]:
    """Trailing whole sentences of ``units`` that fit in ``overlap_tokens``; else the trailing words."""
    if overlap_tokens <= 0 or not units:
        return []
    tail: list[_Unit] = []
    used = 0
    for unit in reversed(units):
        for sentence in reversed(split_sentences(unit.text)):
            cost = count_tokens(sentence)
            if used + cost > overlap_tokens:
                return tail or _word_tail(unit, overlap_tokens, count_tokens)
            tail.insert(0, _Unit(sentence, cost, unit.paragraph))
            used += cost
    return tail


def _word_tail(unit: _Unit, overlap_tokens: int, count_tokens: TokenCounter) -> list[_Unit]:
    # Sentences longer than the overlap: repeat the last words instead, so chunks still share context.
    words: list[str] = []
    used = 0
    for word in reversed(unit.text.split()):
        cost = count_tokens(word)
        if used + cost > overlap_tokens:
            break
        words.insert(0, word)
        used += cost
    return [_Unit(" ".join(words), used, unit.paragraph)] if words else []


def _pack(units: list[_Unit], budget: int, overlap_tokens: int, count_tokens: TokenCounter) -> list[str]:
    bodies: list[str] = []
    current: list[_Unit] = []
    fresh = 0  # units in ``current`` that are not overlap carried from the previous chunk
    for unit in units:
        used = sum(item.num_tokens + 1 for item in current)
        if fresh and used + unit.num_tokens > budget:
            bodies.append(_join(current))
            current = _overlap_tail(current, overlap_tokens, count_tokens)
            fresh = 0
            if sum(item.num_tokens + 1 for item in current) + unit.num_tokens > budget:
                current = []
        current.append(unit)
        fresh += 1
    if fresh:
        bodies.append(_join(current))
    return bodies


def chunk_document(
    document_id: str,
    text: str,
    *,
    count_tokens: TokenCounter,
    chunk_tokens: int,
    overlap: float,
    project: str = DEFAULT_PROJECT,
) -> list[TextChunk]:
    """Split ``text`` (a document of ``project``) into chunks of at most about ``chunk_tokens`` tokens
    along its structure."""
    overlap_tokens = int(round(chunk_tokens * overlap))
    chunks: list[TextChunk] = []
    seen: dict[str, int] = {}
    for section in _sections(text):
        header = " > ".join(section.heading_path)
        header_tokens = count_tokens(header) + 1 if header else 0
        budget = max(MIN_BODY_TOKENS, chunk_tokens - header_tokens)
        units = _units(section.paragraphs, budget, count_tokens)
        for body in _pack(units, budget, min(overlap_tokens, budget // 2), count_tokens):
            chunk_text = f"{header}\n{body}" if header else body
            occurrence = seen.get(chunk_text, 0)
            seen[chunk_text] = occurrence + 1
            chunks.append(
                TextChunk(
                    id=chunk_id(document_id, chunk_text, occurrence, project),
                    ordinal=len(chunks),
                    text=chunk_text,
                    num_tokens=count_tokens(chunk_text),
                )
            )
    return chunks
