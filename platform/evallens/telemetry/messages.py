"""Chat messages wherever they are carried: a request's or a case's message list, the question and
answer in GenAI / OpenInference span attributes (``gen_ai.input.messages``, ``input.value``, ...), and
what an answer's finish reason says of it."""

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from evallens.telemetry import attributes

QUESTION_ATTRIBUTES = (attributes.GEN_AI_INPUT_MESSAGES, attributes.INPUT_VALUE)
ANSWER_ATTRIBUTES = (attributes.GEN_AI_OUTPUT_MESSAGES, attributes.OUTPUT_VALUE)
# An answer's finish reason. COMPLETE: the engine ran it to its end, and the same request would get it
# again. EARLY: vLLM's "abort" (a request it aborted: every one in flight when it shuts down) and "error"
# (an internal, retryable failure); the text is cut wherever the engine stopped. Others ("repetition")
# end an answer the engine chose to stop.
COMPLETE_FINISH_REASONS = frozenset({"stop", "length"})
EARLY_FINISH_REASONS = frozenset({"abort", "error"})
_SURROGATE = re.compile("[\ud800-\udfff]")


def last_message(messages: Iterable[Any], role: str) -> str | None:
    """Content of the last message of ``role``, as written; None when there is none.

    A message is a mapping (``{"role", "content"}``, GenAI ``parts``, or an OpenAI choice holding a
    ``message``) or any object with ``role`` and ``content`` attributes (a request's messages).
    """
    for message in reversed(list(messages)):
        if isinstance(message, dict) and isinstance(message.get("message"), dict):
            message = message["message"]  # an OpenAI choice
        if isinstance(message, dict):
            if message.get("role") == role:
                return _content(message.get("content"), message.get("parts"))
        elif getattr(message, "role", None) == role:
            return _content(getattr(message, "content", None), None)
    return None


def last_user_message(messages: Iterable[Any]) -> str | None:
    """Content of the last user message (what a question is), as written."""
    return last_message(messages, "user")


def _content(content: Any, parts: Any) -> str | None:
    if isinstance(content, str):
        return content
    pieces = parts or content or []
    if not isinstance(pieces, list):  # a client's number or flag where text or parts belong: no text
        return ""
    texts = [str(part.get("content") or part.get("text") or "") for part in pieces if isinstance(part, dict)]
    return " ".join(text for text in texts if text)


def question_from_attribute(value: Any) -> str | None:
    """The last user message in a GenAI/OpenInference input attribute (JSON messages or plain text)."""
    return _from_attribute(value, "user")


def answer_from_attribute(value: Any) -> str | None:
    """The last assistant message in a GenAI/OpenInference output attribute (JSON messages or text)."""
    return _from_attribute(value, "assistant")


def _from_attribute(value: Any, role: str) -> str | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # a client's text nested deeper than Python recurses
            return value.strip() or None
    if isinstance(value, str):
        return clean_text(value.strip()) or None
    if isinstance(value, dict):
        value = value.get("messages", value.get("choices", [value]))
    if not isinstance(value, list):
        return None
    text = last_message(value, role)
    return clean_text((text or "").strip()) or None


def clean_text(text: str) -> str:
    """``text`` with NUL and lone UTF-16 surrogates as U+FFFD: PostgreSQL text and JSONB cannot hold
    NUL, and no UTF-8 text can hold a surrogate (JSON's ``\\u0000`` and ``\\ud800`` decode to them);
    the collector cleans every string it stores with this too."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    # holds_surrogate(), inlined: every string the collector stores passes here
    if not text.isascii() and _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    return text


def holds_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone UTF-16 surrogate, which no UTF-8 encoder (psycopg, a tokenizer) can
    write; only escapes make them (JSON's and YAML's ``\\ud800``)."""
    # surrogates are never ASCII: isascii() is a flag read
    return not text.isascii() and _SURROGATE.search(text) is not None


def nul_path(value: Any) -> str | None:
    """Where the first string in ``value`` holds NUL, which PostgreSQL text and JSONB cannot
    (``string_path``)."""
    return string_path(value, lambda text: "\x00" in text)


def string_path(value: Any, holds: Callable[[str], bool]) -> str | None:
    """Where the first string in ``value`` (a text, or lists and dicts of them) that ``holds`` is: its
    dotted path of keys and indexes ("" for ``value`` itself), or None when none is."""
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:  # iterative: the nesting is whatever the text's author chose
        where, item = pending.pop()
        if isinstance(item, str):
            if holds(item):
                return where
            continue
        items = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        children = [(f"{where}.{key}" if where else str(key), child) for key, child in items]
        pending.extend(reversed(children))  # the first child is looked at first
    return None


def first_text(values: Sequence[Any], role: str) -> str | None:
    """The first of several attribute values that holds a message of ``role``."""
    for value in values:
        text = _from_attribute(value, role) if value is not None else None
        if text:
            return text
    return None
