"""An engine's words as a client may read them: credentials and the prompt's text masked, then cut short.

An engine's error may quote how it is reached or what it was sent: an upstream's error can hold its API
key, its URL with a user and password, or the messages it was sent (the system prompt and the retrieved
context with them). A client reads ``[REDACTED]`` for credentials (a URL's user info, ``Bearer``/``Basic``
tokens, the value of a key, token, secret or password field, API keys of the usual shapes, long opaque
tokens) and ``[PROMPT]`` for any run of the prompt's text of at least ``MIN_PROMPT_CHARS`` letters and
digits (compared on letters and digits alone, so that JSON escapes or quotes around a quoted prompt do not
hide it). Masked first (the first ``MAX_MASKED_CHARS`` characters), cut after: a prompt quoted whole is
not cut into a shorter run that escapes the mask. Credentials are masked by the core's
``evallens.credentials``, as everywhere else (an engine's URL alone: its ``masked_url``).
"""

import re
from collections.abc import Sequence

from evallens.credentials import mask_credentials

__all__ = ["MAX_MASKED_CHARS", "safe_excerpt"]

MAX_MASKED_CHARS = 8192  # of an engine's words read for an excerpt (a traceback, at worst)
MIN_PROMPT_CHARS = 20  # about four words: shorter runs are the engine's own words as often as the prompt's
PROMPT = "[PROMPT]"

_NOT_LETTERS = re.compile(r"[\W_]+")


def safe_excerpt(text: str, prompt: Sequence[str], max_chars: int) -> str:
    """``text`` (an engine's words) with credentials and any text of ``prompt`` (the messages' contents)
    masked, then cut to ``max_chars``."""
    text = mask_credentials(_mask_prompt(text[:MAX_MASKED_CHARS], prompt))
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def _mask_prompt(text: str, contents: Sequence[str]) -> str:
    """``text`` with each run of letters and digits that the prompt also holds (``MIN_PROMPT_CHARS`` of
    them at least, punctuation, spaces and escapes between them ignored) replaced by ``[PROMPT]``."""
    prompt = "\n".join(_NOT_LETTERS.sub("", content.lower()) for content in contents)
    letters, spans = _letters(text)
    starts = range(len(letters) - MIN_PROMPT_CHARS + 1)
    windows = {letters[start : start + MIN_PROMPT_CHARS] for start in starts}
    # one pass over the prompt, however long the text: a long prompt is searched once, not per window
    quoted = windows.intersection(prompt[start : start + MIN_PROMPT_CHARS] for start in range(len(prompt)))
    covered = [False] * len(letters)
    for start in starts:
        if letters[start : start + MIN_PROMPT_CHARS] in quoted:
            covered[start : start + MIN_PROMPT_CHARS] = [True] * MIN_PROMPT_CHARS
    pieces: list[str] = []
    done = 0  # position in ``text`` up to which ``pieces`` hold it
    index = 0
    while index < len(letters):
        if not covered[index]:
            index += 1
            continue
        end = index
        while end + 1 < len(letters) and covered[end + 1]:
            end += 1
        pieces += [text[done : spans[index][0]], PROMPT]
        done = spans[end][1]
        index = end + 1
    pieces.append(text[done:])
    return "".join(pieces)


# A character, or a JSON or Python escape of one: "\n" or '\"' stand for no letter, "\u00e9" for "é"
_CHARACTER = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|U([0-9a-fA-F]{8})|.)|.", re.S)


def _letters(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The letters and digits ``text`` holds or escapes, in lower case, and where each sits in it."""
    letters: list[str] = []
    spans: list[tuple[int, int]] = []
    for match in _CHARACTER.finditer(text):
        code = match[1] or match[2] or match[3]
        char = chr(int(code, 16)) if code else match[0]
        if len(char) == 1 and char.isalnum():
            lower = char.lower()
            letters.append(lower if len(lower) == 1 else char)  # one character each, as their spans
            spans.append(match.span())
    return "".join(letters), spans
