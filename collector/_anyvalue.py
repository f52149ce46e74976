"""OTLP ``AnyValue``/``KeyValue`` lists into plain JSON-ready Python values."""

import base64
import math
from collections.abc import Iterable
from typing import Any

from evallens.telemetry.messages import clean_text


def any_value(value: Any) -> Any:
    """The Python value of an OTLP ``AnyValue`` (bytes as base64, non-finite doubles as strings)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return clean_text(value.string_value)
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return key_values(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def key_values(items: Iterable[Any]) -> dict[str, Any]:
    """A ``repeated KeyValue`` as a flat dict (the last of repeated keys wins)."""
    flat: dict[str, Any] = {}
    for item in items:
        value = item.value
        kind = value.WhichOneof("value")
        key = item.key
        if "\x00" in key:
            key = clean_text(key)
        # strings and numbers are nearly all attributes: read them without another call
        if kind == "string_value":
            text = value.string_value
            flat[key] = text if "\x00" not in text else clean_text(text)
        elif kind == "int_value":
            flat[key] = value.int_value
        else:
            flat[key] = any_value(value)
    return flat
