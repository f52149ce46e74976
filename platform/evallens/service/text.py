"""What text a request may carry: request models check their strings with these types, so a string
that the tokenizer or PostgreSQL would choke on is a 400 that names the field, never a 500.

JSON's ``\\ud800`` escapes decode to lone surrogates, which no UTF-8 encoder (tokenizers, psycopg)
accepts; JSON's ``\\u0000`` decodes to NUL, which PostgreSQL's text and JSONB refuse; Python's JSON
parser also reads ``NaN`` and ``Infinity``, which JSONB refuses.
"""

import math
from typing import Annotated, Any

from pydantic import AfterValidator

__all__ = ["MAX_JSON_DEPTH", "StorableJson", "StorableText", "UnicodeText"]

# Stored JSON is answered again (a document's metadata in ``GET /v1/documents``), and pydantic refuses to
# serialize nesting past about 250 levels: a deeper value was stored, then every listing of its project
# was a 500. Far more than any metadata needs.
MAX_JSON_DEPTH = 64


def unicode_text(value: str) -> str:
    """``value`` if it is valid Unicode text (encodable as UTF-8), else a validation error."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"text must be valid Unicode: a lone surrogate (\\u{ord(value[error.start]):04x}) at "
            f"position {error.start}"
        ) from None
    return value


def storable_text(value: str) -> str:
    """``value`` if PostgreSQL text can hold it: valid Unicode and no NUL character."""
    unicode_text(value)
    if "\x00" in value:
        raise ValueError(f"text must not contain NUL (\\u0000): one at position {value.index(chr(0))}")
    return value


def storable_json(value: Any) -> Any:
    """``value`` if PostgreSQL JSONB can hold it (storable strings, keys too, and finite numbers) and the
    API can answer with it again: nested at most ``MAX_JSON_DEPTH`` levels deep."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:  # iterative: nesting depth is the client's choice
        item, depth = pending.pop()
        if isinstance(item, str):
            storable_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"numbers must be finite, got {item}")
        elif isinstance(item, dict | list) and depth > MAX_JSON_DEPTH:
            raise ValueError(f"JSON must not nest objects and arrays more than {MAX_JSON_DEPTH} levels deep")
        elif isinstance(item, dict):
            pending.extend((key, depth) for key in item)
            pending.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in item)
    return value


UnicodeText = Annotated[str, AfterValidator(unicode_text)]
StorableText = Annotated[str, AfterValidator(storable_text)]
StorableJson = Annotated[dict[str, Any], AfterValidator(storable_json)]
