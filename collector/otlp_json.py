"""OTLP/JSON into the protobuf request, and responses back to OTLP/JSON.

OTLP/JSON differs from protobuf's canonical JSON in one way that matters: trace and span ids are
hex, not base64. Everything else (lowerCamelCase or snake_case names, integer enums, int64 as
strings) ``json_format`` already accepts; unknown fields are ignored as the spec asks. What it would
read other than as sent (a number as text JSON would not write, bytes as text that is not base64, a
field under both its names) is refused first (``check_json_fields``).
"""

import base64
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import orjson
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from collector.validate import DECIMAL_TEXT

ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")
# What a span's id that is not hex (base64, say) becomes: three bytes, a length no id has, so the
# decoder rejects that span and says why, instead of reading a bad parent id as none (a root span)
NOT_HEX = b"\xff\xff\xff"
_NOT_HEX_BASE64 = base64.b64encode(NOT_HEX).decode("ascii")
# An id as OTLP/JSON writes it: hex digits in pairs, either case. ``bytes.fromhex`` also skips
# whitespace ("0a 1b ..."), which no exporter writes: such an id is refused, as any other that is not hex.
HEX_ID_TEXT = re.compile(r"(?:[0-9a-fA-F]{2})*")


class MalformedRequest(ValueError):
    """The body is not a well-formed OTLP export request; the message says what is wrong."""


def load_json_request(body: bytes) -> dict[str, Any]:
    """The JSON document of an OTLP/JSON body, not yet a protobuf request: its spans can be counted
    (``iter_span_objects``) before ``json_request`` builds a message for each."""
    return load_json_document(body, "resourceSpans")


def load_json_document(body: bytes, holds: str) -> dict[str, Any]:
    """The JSON object of an OTLP/JSON body (``holds``: the list it should hold, for the error)."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        readable, num_replaced = _LONE_SURROGATE.subn(_replace_lone_surrogate, body)
        if not num_replaced:
            raise MalformedRequest(f"body is not valid JSON: {error}") from None
        try:
            document = orjson.loads(readable)
        except orjson.JSONDecodeError as error:
            raise MalformedRequest(f"body is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise MalformedRequest(f"body must be a JSON object with {holds}")
    return document


# JSON may escape a lone UTF-16 surrogate: JavaScript's JSON.stringify writes one for a string cut
# inside an emoji, as OpenTelemetry JS does when it truncates attribute values. orjson refuses it, and
# no UTF-8 text can hold it; as in Go's encoding/json (the OpenTelemetry Collector's), it reads as
# U+FFFD. A match is an escape (an even run of backslashes before it) of a pair or of a lone half.
_LONE_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_PAIR_LENGTH = len(rb"\ud83d\ude00")


def _replace_lone_surrogate(match: re.Match[bytes]) -> bytes:
    backslashes, escape = match.group(1), match.group(2)
    return match.group(0) if len(escape) == _PAIR_LENGTH else backslashes + rb"\ufffd"


def json_request(document: dict[str, Any]) -> tuple[ExportTraceServiceRequest, tuple[str, ...]]:
    """The ``ExportTraceServiceRequest`` of a loaded OTLP/JSON document (hex ids made protobuf's), and
    why each span ``json_format`` cannot read (an int over int64, a name that is a list), or whose
    resource or scope it cannot read, was left out.

    Such a span made the whole request a 400 and its exporter dropped every good span with it; a
    request with no readable span still is one.
    """
    for span in iter_span_objects(document):
        rewrite_ids(span, mark_not_hex=True)
        for link in _list(span.get("links")):
            if isinstance(link, dict):
                rewrite_ids(link)
    request = ExportTraceServiceRequest()
    unreadable = parse_readable(document, request, TRACE_LEVELS)
    return request, unreadable


@dataclass(frozen=True)
class Level:
    """One level of an OTLP/JSON request: the names of its list in the level above, the message each
    entry is, and what the entry is called in a rejection reason."""

    keys: tuple[str, ...]
    message: type[Message]
    called: str


TRACE_LEVELS = (
    Level(("resourceSpans", "resource_spans"), ResourceSpans, "resource"),
    Level(("scopeSpans", "scope_spans"), ScopeSpans, "scope"),
    Level(("spans",), Span, "span"),
)
_PARSE_ERRORS = (json_format.ParseError, ValueError, TypeError, AttributeError, RecursionError)
# Messages json_format reads nested in one another, as upb reads a protobuf span (one at a time)
MAX_MESSAGE_DEPTH = 100
MAX_REASON_CHARS = 300


def parse_readable(document: dict[str, Any], request: Message, levels: tuple[Level, ...]) -> tuple[str, ...]:
    """Parse ``document`` into ``request``; when ``json_format`` refuses it, leave out each record it
    cannot read, or whose resource or scope it cannot read, and say why once per record left out.

    ``MalformedRequest`` when nothing it refused was a record, or no record is left.
    """
    # each record nests as deep in the request as alone, where ``_drop_unreadable`` tries it: a record
    # only the request's depth pushed over the limit made the request a 400 with every good one in it
    max_depth = MAX_MESSAGE_DEPTH + len(levels)
    try:
        _parse_into(document, request, max_depth)
    except MalformedRequest:
        unreadable = _drop_unreadable(document, levels)
        if not unreadable or not _num_records(document, levels):
            raise
    else:
        return ()
    _parse_into(document, request, max_depth)
    return tuple(unreadable)


def _parse_into(document: dict[str, Any], request: Message, max_depth: int) -> None:
    request.Clear()
    try:
        check_json_fields(document, request)
        json_format.ParseDict(document, request, ignore_unknown_fields=True, max_recursion_depth=max_depth)
    except _PARSE_ERRORS as error:
        name = request.DESCRIPTOR.name
        raise MalformedRequest(f"not an OTLP {name}: {error}") from None


def _drop_unreadable(parent: Any, levels: tuple[Level, ...]) -> list[str]:
    """Take the entries ``json_format`` refuses out of ``parent``'s list at ``levels[0]``, and each
    entry's list below; a resource or scope refused takes its records with it."""
    level, below = levels[0], levels[1:]
    entries = _list(_get(parent, *level.keys))
    reasons: list[str] = []
    readable = []
    for entry in entries:
        own = entry
        if below and isinstance(entry, dict):
            own = {key: value for key, value in entry.items() if key not in below[0].keys}
        try:
            message = level.message()
            check_json_fields(own, message)
            json_format.ParseDict(
                own, message, ignore_unknown_fields=True, max_recursion_depth=MAX_MESSAGE_DEPTH
            )
        except _PARSE_ERRORS as error:
            reason = f"{level.called} is not OTLP/JSON: {error}"[:MAX_REASON_CHARS]
            reasons += [reason] * (_num_records(entry, below) if below else 1)
            continue
        readable.append(entry)
        if below:
            reasons += _drop_unreadable(entry, below)
    entries[:] = readable
    return reasons


def _num_records(parent: Any, levels: tuple[Level, ...]) -> int:
    """How many entries the lowest of ``levels`` holds under ``parent``."""
    entries = _list(_get(parent, *levels[0].keys))
    if len(levels) == 1:
        return len(entries)
    return sum(_num_records(entry, levels[1:]) for entry in entries)


# proto3 JSON takes an integer as a JSON number or as text, a float also as "NaN" or "Infinity" text.
# json_format reads the text with int() and float(), which take "1e3", "1.0", "+5", "012", "1_000",
# "12\n", "١٢" (Arabic-Indic digits) and "inf": read as the number JSON writes (as ``collector.validate``
# reads numbers sent as text), so a value the client never wrote is refused, not stored.
INTEGER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)")
FLOAT_WORDS = frozenset(("NaN", "Infinity", "-Infinity"))
INTEGER_TYPES = frozenset(
    (
        FieldDescriptor.CPPTYPE_INT32,
        FieldDescriptor.CPPTYPE_INT64,
        FieldDescriptor.CPPTYPE_UINT32,
        FieldDescriptor.CPPTYPE_UINT64,
    )
)
FLOAT_TYPES = frozenset((FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE))
# proto3 JSON takes bytes as standard or URL-safe base64, with or without padding. json_format decodes
# with ``urlsafe_b64decode``, which drops every character outside the alphabet ("aGVs bG8=", "aGVs*bG8"):
# the stored bytes would differ from those sent. One alphabet per value, as Go's protojson reads it.
_BASE64_TAIL = r"(?:{c}{{4}})*(?:{c}{{2}}(?:==)?|{c}{{3}}=?)?"
_STANDARD, _URL_SAFE = _BASE64_TAIL.format(c="[A-Za-z0-9+/]"), _BASE64_TAIL.format(c="[A-Za-z0-9_-]")
BASE64_TEXT = re.compile(f"{_STANDARD}|{_URL_SAFE}")
_fields_by_key: dict[str, dict[str, FieldDescriptor]] = {}


def check_json_fields(document: dict[str, Any], message: Message) -> None:
    """``json_format.ParseError`` for what ``json_format`` would read of ``document`` (to be read into
    ``message``) other than as sent: a number field sent as text JSON would not write (an integer or
    enum number not as ``INTEGER_TEXT``, a float neither a JSON number nor ``FLOAT_WORDS``), bytes
    sent as text that is not ``BASE64_TEXT``, or a field sent under both its names (``traceId`` and
    ``trace_id``), of which json_format keeps the last and drops the other without a word."""
    # upb's descriptor and the Python one have separate stubs; both are read through the same attributes
    pending: list[tuple[dict[str, Any], Descriptor]] = [(document, cast(Descriptor, message.DESCRIPTOR))]
    while pending:
        item, descriptor = pending.pop()
        fields = _fields(descriptor)
        named: dict[str, str] = {}
        for key, value in item.items():
            field = fields.get(key)
            if field is None:
                continue
            if len(item) > 1:
                other = named.setdefault(field.name, key)
                if other != key:
                    raise json_format.ParseError(f"{other} and {key} are one field: send it once")
            values = value if isinstance(value, list) else (value,)
            if field.message_type is not None:
                pending.extend((entry, field.message_type) for entry in values if isinstance(entry, dict))
                continue
            for entry in values:
                if isinstance(entry, str) and not _is_read_as_sent(field, entry):
                    raise json_format.ParseError(f"{key} {_shown(entry)} is not {_text_kind(field)}")


def _fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    """A message's fields by both names json_format reads (``intValue``, ``int_value``)."""
    fields = _fields_by_key.get(descriptor.full_name)
    if fields is None:
        fields = {name: field for field in descriptor.fields for name in (field.json_name, field.name)}
        _fields_by_key[descriptor.full_name] = fields
    return fields


def _is_read_as_sent(field: FieldDescriptor, text: str) -> bool:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return BASE64_TEXT.fullmatch(text) is not None
    if field.cpp_type in INTEGER_TYPES:
        return INTEGER_TEXT.fullmatch(text) is not None
    if field.cpp_type in FLOAT_TYPES:
        return text in FLOAT_WORDS or DECIMAL_TEXT.fullmatch(text) is not None
    if field.enum_type is not None:
        return text in field.enum_type.values_by_name or INTEGER_TEXT.fullmatch(text) is not None
    return True


def _text_kind(field: FieldDescriptor) -> str:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return "base64 (standard or URL-safe, padded or not)"
    if field.cpp_type in FLOAT_TYPES:
        return 'a number as JSON writes one (or "NaN", "Infinity", "-Infinity")'
    if field.enum_type is not None:
        return f"a {field.enum_type.name} name or an integer as JSON writes one"
    return "an integer as JSON writes one (digits, no leading zero, no sign but minus)"


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37]) + "..."


def parse_protobuf_request(body: bytes) -> ExportTraceServiceRequest:
    """An ``ExportTraceServiceRequest`` from a binary protobuf body."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except Exception as error:  # protobuf raises DecodeError, or RuntimeError for deep recursion
        raise MalformedRequest(f"body is not a protobuf ExportTraceServiceRequest: {error}") from None
    return request


def count_json_entries(document: dict[str, Any], levels: Sequence[Level], stop_after: int) -> tuple[int, int]:
    """The resource entries and scope entries of a loaded OTLP/JSON document (of ``levels``); scopes
    are not counted once the resources number more than ``stop_after``."""
    resources = entries_named(document, levels[0].keys)
    if len(resources) > stop_after:
        return len(resources), 0
    return len(resources), sum(len(entries_named(resource, levels[1].keys)) for resource in resources)


def iter_span_objects(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The span objects of an OTLP/JSON document, whatever their field-name style."""
    spans: list[dict[str, Any]] = []
    for resource_spans in entries_named(document, TRACE_LEVELS[0].keys):
        for scope_spans in entries_named(resource_spans, TRACE_LEVELS[1].keys):
            spans.extend(span for span in entries_named(scope_spans, ("spans",)) if isinstance(span, dict))
    return spans


def entries_named(item: Any, keys: tuple[str, ...]) -> list[Any]:
    """The entries of ``item``'s list under every one of ``keys`` (names of one field).

    json_format reads the last of the names present, so counting and rewriting the first one only
    left the other unchecked: a request of 500,000 spans under ``resource_spans`` after an empty
    ``resourceSpans`` passed the span cap (and ``check_json_fields`` then refuses both names).
    """
    if not isinstance(item, dict):
        return []
    return [entry for key in keys for entry in _list(item.get(key))]


def rewrite_ids(item: dict[str, Any], *, mark_not_hex: bool = False) -> None:
    """Hex ids into the base64 ``json_format`` wants. An id that is not hex becomes empty (a link's),
    or ``NOT_HEX`` with ``mark_not_hex`` (spans and log records, refused saying why: an empty parent
    id would mean "no parent", and an empty id "none sent")."""
    for key in ID_FIELDS:
        value = item.get(key)
        if isinstance(value, str):
            if HEX_ID_TEXT.fullmatch(value):
                item[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            else:
                item[key] = _NOT_HEX_BASE64 if mark_not_hex else ""


def not_hex_reason(which: str, num_bytes: int) -> str:
    """Why an id that was ``NOT_HEX`` is refused (``which``: "trace id", ...; ``num_bytes``: its size)."""
    return f"{which} is not hex: OTLP/JSON carries ids as hex strings ({2 * num_bytes} digits), not base64"


def message_to_json(message: Message) -> bytes:
    """A response message as OTLP/JSON (lowerCamelCase, int64 as strings)."""
    return json_format.MessageToJson(message, indent=None).encode()


def _get(item: Any, *keys: str) -> Any:
    if not isinstance(item, dict):
        return None
    for key in keys:
        if key in item:
            return item[key]
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
