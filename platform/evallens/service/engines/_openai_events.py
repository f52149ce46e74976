"""One event of an OpenAI-compatible chat completion stream, read as the protocol types its fields.

What the upstream sends is not trusted to be the type the protocol says: a finish reason that is a
number, content that is a list or a token count that is text was passed on, and failed later as a 500
(a response model refusing it) or was read as something else ("9" as 9, 1.5 as 1). Each is the
engine's fault, an ``EngineMalformedReply`` naming the field.

An upstream that fails a request after its stream began says so in an error event, and ends the stream
as usual: that event is ``EngineFailed``, never skipped (the answer before it is cut, not complete). Its
message is quoted as a client may read it (``excerpts``: no credentials, no text of the prompt).

The service asks for one choice (it never sends ``n``): an event of several choices, or of a choice whose
``index`` is not 0 (OpenAI streams ``n`` > 1 as one choice an event, each with its index), is malformed,
never merged into the one answer.
"""

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evallens.service.engines.base import EngineFailed, EngineMalformedReply
from evallens.service.engines.excerpts import safe_excerpt

__all__ = ["StreamEvent", "read_event"]

# A finish reason is a name: OpenAI's ("stop", "length", "tool_calls"), vLLM's ("abort", "error") or
# another server's ("eos_token"), passed on as sent; text that is no such name is no finish reason.
FINISH_REASON = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_TOKENS = 2**63 - 1  # what a span attribute (int64) and the database hold
MAX_SHOWN_CHARS = 200
MAX_SHOWN_VALUE_CHARS = 40
MAX_SHOWN_ERROR_CHARS = 300  # of an upstream's error message (a traceback, at worst)


@dataclass(frozen=True)
class StreamEvent:
    """The new text and finish reason of each choice, and the token counts when the event has usage."""

    deltas: tuple[tuple[str, str | None], ...] = ()
    num_prompt_tokens: int | None = None
    num_output_tokens: int | None = None


def read_event(line: str, data: str, prompt: Sequence[str] = ()) -> StreamEvent:
    """The event whose JSON is ``data`` (of the SSE ``line``); ``EngineFailed`` when it is the upstream's
    error (its message with ``prompt``, the messages' contents, masked), ``EngineMalformedReply`` saying
    what is wrong when it is not an OpenAI chat completion chunk."""
    try:
        event = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        raise _malformed(line, "not JSON") from None
    if not isinstance(event, dict):
        raise _malformed(line, "not a JSON object")
    if event.get("error") is not None or event.get("object") == "error":
        raise _failed(event, prompt)
    choices = _typed(line, event, "choices", list, [])
    if len(choices) > 1:
        raise _malformed(line, f"it holds {len(choices)} choices; the service asks for one")
    deltas = []
    for index, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise _malformed(line, f"choices[{index}] is {_json_type(choice)}, not an object")
        number = choice.get("index")  # absent: the one choice, as some servers send it
        if number is not None and (type(number) is not int or number != 0):
            shown = json.dumps(number)[:MAX_SHOWN_VALUE_CHARS]
            raise _malformed(line, f"choices[{index}].index is {shown}, not 0: the service asks for one")
        delta = _typed(line, choice, "delta", dict, {}, f"choices[{index}].")
        content = _text(line, _typed(line, delta, "content", str, "", f"choices[{index}].delta."))
        finish_reason = _typed(line, choice, "finish_reason", str, "", f"choices[{index}].")
        if finish_reason and not FINISH_REASON.fullmatch(finish_reason):
            raise _malformed(line, f"choices[{index}].finish_reason is not a finish reason's name")
        deltas.append((content, finish_reason or None))
    usage = _typed(line, event, "usage", dict, {})
    return StreamEvent(
        tuple(deltas),
        _num_tokens(line, usage, "prompt_tokens"),
        _num_tokens(line, usage, "completion_tokens"),
    )


def _failed(event: dict[str, Any], prompt: Sequence[str]) -> EngineFailed:
    """The upstream's error event as an engine failure naming it: OpenAI's and vLLM's ``{"error": {"message",
    "type", "code"}}``, older vLLM's ``{"object": "error", "message", ...}`` or a bare ``{"error": "..."}``.
    vLLM sends any failure in a stream as a "BadRequestError" of code 400: its type says nothing of whose
    fault it is (a request is refused before its stream begins)."""
    error = event.get("error", event)
    if not isinstance(error, dict):
        error = {"message": error}
    message = error.get("message")
    text = safe_excerpt(
        message if isinstance(message, str) else json.dumps(message), prompt, MAX_SHOWN_ERROR_CHARS
    )
    said = [
        f"{key} {json.dumps(error[key])[:MAX_SHOWN_VALUE_CHARS]}"
        for key in ("type", "code")
        if isinstance(error.get(key), str | int)
    ]
    details = f" ({', '.join(said)})" if said else ""
    return EngineFailed(f"The engine failed the request: its stream sent the error {text!r}{details}.")


def _typed(line: str, item: dict[str, Any], key: str, kind: type, default: Any, where: str = "") -> Any:
    """``item[key]`` when it is a ``kind``, ``default`` when absent or null."""
    value = item.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise _malformed(line, f"{where}{key} is {_json_type(value)}, not {_json_type(kind())}")
    return value


def _text(line: str, text: str) -> str:
    """``text`` when it is Unicode: JSON can escape a lone surrogate, which no response can write."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise _malformed(line, "its content is not Unicode text (a lone surrogate)") from None
    return text


def _num_tokens(line: str, usage: dict[str, Any], key: str) -> int | None:
    if key not in usage:
        return None
    value = usage[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        shown = json.dumps(value)[:MAX_SHOWN_VALUE_CHARS]
        raise _malformed(line, f"usage.{key} is {shown}, not a count of tokens")
    return value


def _json_type(value: object) -> str:
    """What JSON calls ``value``'s type, with its article."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _malformed(line: str, problem: str) -> EngineMalformedReply:
    return EngineMalformedReply(
        f"the engine answered something that is not an OpenAI stream event: "
        f"{line[:MAX_SHOWN_CHARS]!r} ({problem})"
    )
