"""Spans as PostgreSQL COPY text rows, encoded once in a decode worker and streamed as they are.

A row is one line of COPY's text format in ``SPAN_COLUMNS`` order: fields split by tabs, ``\\N``
for NULL, and backslash, tab, newline and carriage return escaped inside values, so a line is always
one row. The writer sends a batch's bytes with ``Copy.write``; only the rare paths that must look at
single spans (bisecting a refused batch, the quarantine) split the lines and decode them back.
"""

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import orjson

from collector.records import EPOCH, SPAN_COLUMNS, SpanRecord
from collector.validate import SpansTooLarge

NULL = "\\N"
US_PER_DAY = 86_400 * 1_000_000
NS_PER_US = 1000
ROWS_PER_CHUNK = 1000
# NUL cannot be in PostgreSQL text at all: it becomes U+FFFD, as the decoder does (``clean_text``).
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\x00": "\ufffd"})
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
_needs_escape = re.compile(r"[\\\t\n\r\x00]").search
_escaped = re.compile(r"\\(.)")
_EPOCH_DATE = date(1970, 1, 1)
_PROJECT_FIELD = SPAN_COLUMNS.index("project")


class BadRow(ValueError):
    """A line is not a row this module wrote (a damaged spool file)."""


@dataclass(frozen=True, slots=True)
class CopyRows:
    """``num_rows`` COPY text rows in ``data``, and the UTC days (since the epoch) they start on."""

    data: bytes = b""
    num_rows: int = 0
    days: tuple[int, ...] = ()

    def lines(self) -> list[bytes]:
        """Each row's line, without its newline."""
        return self.data.split(b"\n")[:-1] if self.data else []

    def records(self) -> list[SpanRecord]:
        """The rows as records again (for the quarantine)."""
        return [decode_line(line) for line in self.lines()]

    def partition_days(self) -> list[date]:
        """The days as dates: the partitions the rows need."""
        return [_EPOCH_DATE + timedelta(days=day) for day in self.days]

    def days_by_project(self) -> dict[bytes, set[date]]:
        """The days each project's rows start on (projects as COPY text: told apart, not read)."""
        days: dict[bytes, set[date]] = {}
        for line in self.lines():
            days.setdefault(line.split(b"\t", _PROJECT_FIELD + 1)[_PROJECT_FIELD], set()).add(line_day(line))
        return days

    def without_days(self, days: set[date]) -> tuple["CopyRows", list[int], list[tuple[int, bytes]]]:
        """These rows less those that start on ``days``; the kept rows' places in ``self``, and the
        left-out rows with theirs."""
        kept: list[bytes] = []
        kept_at: list[int] = []
        left_out: list[tuple[int, bytes]] = []
        for index, line in enumerate(self.lines()):
            if line_day(line) in days:
                left_out.append((index, line))
            else:
                kept.append(line)
                kept_at.append(index)
        other_days = tuple(day for day in self.days if _EPOCH_DATE + timedelta(days=day) not in days)
        return CopyRows.of_lines(kept, other_days), kept_at, left_out

    @staticmethod
    def joined(parts: Sequence["CopyRows"]) -> "CopyRows":
        """One ``CopyRows`` of every row of ``parts``, in order."""
        if len(parts) == 1:
            return parts[0]
        days = sorted({day for part in parts for day in part.days})
        return CopyRows(b"".join(part.data for part in parts), sum(p.num_rows for p in parts), tuple(days))

    @staticmethod
    def of_lines(lines: Sequence[bytes], days: tuple[int, ...]) -> "CopyRows":
        """The rows of ``lines`` (as ``lines()`` gives them); ``days`` may cover more than they need."""
        return CopyRows(b"\n".join(lines) + b"\n" if lines else b"", len(lines), days)


@dataclass(frozen=True, slots=True)
class PackedSpans:
    """One request's spans as ``CopyRows`` chunks of at most ``ROWS_PER_CHUNK`` rows.

    Decode workers hand these back; the queue holds them and the writer streams their bytes, so
    neither the event loop nor the writer builds a row.
    """

    chunks: tuple[CopyRows, ...] = ()
    num_spans: int = 0

    @property
    def num_bytes(self) -> int:
        """Bytes the chunks occupy."""
        return sum(len(chunk.data) for chunk in self.chunks)

    def chunk_spans(self, index: int) -> int:
        """How many spans chunk ``index`` holds."""
        return self.chunks[index].num_rows


def text(value: str) -> str:
    """``value`` as a COPY text field."""
    return value.translate(_ESCAPES) if _needs_escape(value) else value


def optional_text(value: str | None) -> str:
    """``value`` as a COPY text field, ``\\N`` for None."""
    if value is None:
        return NULL
    return value.translate(_ESCAPES) if _needs_escape(value) else value


def json_text(value: Any) -> str:
    """``value`` as JSON in a COPY field: JSON escapes every control character, leaving backslashes."""
    encoded = orjson.dumps(value).decode()
    return encoded.replace("\\", "\\\\") if "\\" in encoded else encoded


_second_texts: dict[int, str] = {}
MAX_CACHED_SECONDS = 4096


def timestamp_text(unix_ns: int) -> str:
    """A ``timestamptz`` field in UTC, to the microsecond PostgreSQL keeps (as ``datetime_from_ns``)."""
    seconds, micros = divmod(unix_ns // NS_PER_US, 1_000_000)
    prefix = _second_texts.get(seconds)
    if prefix is None:  # spans of a batch mostly share their seconds: format each second once
        if len(_second_texts) >= MAX_CACHED_SECONDS:
            _second_texts.clear()
        moment = EPOCH + timedelta(seconds=seconds)
        prefix = _second_texts[seconds] = f"{moment:%Y-%m-%d %H:%M:%S}"
    return f"{prefix}.{micros:06}+00"


def day_of(unix_ns: int) -> int:
    """The UTC day (since the epoch) a span starting at ``unix_ns`` is stored under."""
    return unix_ns // NS_PER_US // US_PER_DAY


def line_day(line: bytes) -> date:
    """The UTC day a row of ``encode_span`` starts on (its third field: ids are hex, never escaped)."""
    return date.fromisoformat(line.split(b"\t", 3)[2][:10].decode())


def _number(value: float | None) -> str:
    return NULL if value is None else repr(value)


def encode_span(span: SpanRecord, resource_json: str) -> str:
    """The COPY line of ``span`` (with its newline); ``resource_json`` is ``json_text(span.resource)``."""
    # one search over every text value (None reads "None": harmless) instead of one per field
    if _needs_escape(
        f"{span.trace_id}{span.span_id}{span.parent_span_id}{span.name}{span.service_name}"
        f"{span.scope_name}{span.scope_version}{span.status_message}{span.project}{span.model}"
        f"{span.tenant}{span.user_id}{span.feature}{span.eval_run_id}{span.eval_case_id}"
    ):
        return _escaped_line(span, resource_json)
    return (
        f"{span.trace_id}\t{span.span_id}\t{timestamp_text(span.start_time_ns)}\t"
        f"{timestamp_text(span.end_time_ns)}\t{(span.end_time_ns - span.start_time_ns) / 1e6!r}\t"
        f"{NULL if span.parent_span_id is None else span.parent_span_id}\t{span.name}\t{span.kind}\t"
        f"{NULL if span.service_name is None else span.service_name}\t"
        f"{NULL if span.scope_name is None else span.scope_name}\t"
        f"{NULL if span.scope_version is None else span.scope_version}\t{span.status_code}\t"
        f"{NULL if span.status_message is None else span.status_message}\t"
        f"{json_text(span.attributes)}\t{resource_json}\t"
        f"{json_text(span.events) if span.events else '[]'}\t{span.project}\t"
        f"{NULL if span.model is None else span.model}\t"
        f"{NULL if span.input_tokens is None else span.input_tokens}\t"
        f"{NULL if span.output_tokens is None else span.output_tokens}\t"
        f"{NULL if span.cost_usd is None else repr(span.cost_usd)}\t"
        f"{NULL if span.tenant is None else span.tenant}\t"
        f"{NULL if span.user_id is None else span.user_id}\t"
        f"{NULL if span.feature is None else span.feature}\t"
        f"{NULL if span.eval_run_id is None else span.eval_run_id}\t"
        f"{NULL if span.eval_case_id is None else span.eval_case_id}\n"
    )


def _escaped_line(span: SpanRecord, resource_json: str) -> str:
    """``encode_span`` for a span with a value to escape: field by field."""
    return (
        "\t".join(
            (
                text(span.trace_id),
                text(span.span_id),
                timestamp_text(span.start_time_ns),
                timestamp_text(span.end_time_ns),
                repr((span.end_time_ns - span.start_time_ns) / 1e6),
                optional_text(span.parent_span_id),
                text(span.name),
                str(span.kind),
                optional_text(span.service_name),
                optional_text(span.scope_name),
                optional_text(span.scope_version),
                str(span.status_code),
                optional_text(span.status_message),
                json_text(span.attributes),
                resource_json,
                json_text(span.events) if span.events else "[]",
                text(span.project),
                optional_text(span.model),
                _number(span.input_tokens),
                _number(span.output_tokens),
                _number(span.cost_usd),
                optional_text(span.tenant),
                optional_text(span.user_id),
                optional_text(span.feature),
                optional_text(span.eval_run_id),
                optional_text(span.eval_case_id),
            )
        )
        + "\n"
    )


def encode_spans(
    spans: Iterable[SpanRecord], rows_per_chunk: int = ROWS_PER_CHUNK, max_bytes: int | None = None
) -> Iterator[CopyRows]:
    """``spans`` as ``CopyRows`` of at most ``rows_per_chunk`` rows, each resource's JSON made once.

    ``SpansTooLarge`` as soon as the rows take more than ``max_bytes``: each row repeats its resource's
    JSON, so a small body of many spans sharing a large resource packed into gigabytes.
    """
    resource_json: dict[int, str] = {}
    lines: list[str] = []
    days: set[int] = set()
    limit = max_bytes if max_bytes is not None else math.inf
    num_made = num_waiting = 0  # bytes of the chunks made; characters (at most bytes) of the lines after
    for span in spans:
        key = id(span.resource)  # spans of one resource share its dict
        resource = resource_json.get(key)
        if resource is None:
            resource = resource_json[key] = json_text(span.resource)
        line = encode_span(span, resource)
        num_waiting += len(line)
        if num_made + num_waiting > limit:
            raise _too_large(limit)
        lines.append(line)
        days.add(day_of(span.start_time_ns))
        if len(lines) == rows_per_chunk:
            chunk = _chunk(lines, days)
            num_made, num_waiting = num_made + len(chunk.data), 0
            if num_made > limit:
                raise _too_large(limit)
            yield chunk
            lines, days = [], set()
    if lines:
        chunk = _chunk(lines, days)
        if num_made + len(chunk.data) > limit:
            raise _too_large(limit)
        yield chunk


def _chunk(lines: list[str], days: set[int]) -> CopyRows:
    return CopyRows("".join(lines).encode(), len(lines), tuple(sorted(days)))


def _too_large(max_bytes: float) -> SpansTooLarge:
    return SpansTooLarge(
        f"the request's spans decode to more than {max_bytes:.0f} bytes, the most one request may queue "
        "(each span's row repeats its resource's attributes): send fewer spans per request or a smaller "
        "resource"
    )


def copy_rows(spans: Iterable[SpanRecord]) -> CopyRows:
    """Every span of ``spans`` in one ``CopyRows``."""
    chunks = list(encode_spans(spans))
    return CopyRows.joined(chunks) if chunks else CopyRows()


def pack_spans(spans: Iterable[SpanRecord], max_bytes: int | None = None) -> PackedSpans:
    """``spans`` as ``PackedSpans``; ``SpansTooLarge`` when they take more than ``max_bytes``."""
    chunks = tuple(encode_spans(spans, max_bytes=max_bytes))
    return PackedSpans(chunks, sum(chunk.num_rows for chunk in chunks))


def _unescape(field: str) -> str:
    return _escaped.sub(lambda match: _UNESCAPES.get(match[1], match[1]), field) if "\\" in field else field


def _ns(field: str) -> int:
    moment = datetime.fromisoformat(field)
    return (moment - EPOCH) // timedelta(microseconds=1) * NS_PER_US


def decode_line(line: bytes) -> SpanRecord:
    """The record a line of ``encode_span`` came from (times to the microsecond); ``BadRow`` if none."""
    try:
        raw = line.decode().split("\t")
        if len(raw) != len(_COLUMN_READERS):
            raise BadRow(f"a row has {len(raw)} fields, not {len(_COLUMN_READERS)}")
        readers = zip(raw, _COLUMN_READERS, strict=True)
        values: list[Any] = [None if field == NULL else read(field) for field, read in readers]
    except (ValueError, orjson.JSONDecodeError) as error:
        raise BadRow(f"not a span row: {error}") from None
    del values[4]  # duration_ms: the record computes it from the times
    return SpanRecord(*values)


def _json(field: str) -> Any:
    return orjson.loads(_unescape(field))


_COLUMN_READERS: tuple[Callable[[str], Any], ...] = (
    str,  # trace_id
    str,  # span_id
    _ns,  # start_time
    _ns,  # end_time
    float,  # duration_ms
    str,  # parent_span_id
    _unescape,  # name
    int,  # kind
    _unescape,  # service_name
    _unescape,  # scope_name
    _unescape,  # scope_version
    int,  # status_code
    _unescape,  # status_message
    _json,  # attributes
    _json,  # resource
    _json,  # events
    _unescape,  # project
    _unescape,  # model
    int,  # input_tokens
    int,  # output_tokens
    float,  # cost_usd
    _unescape,  # tenant
    _unescape,  # user_id
    _unescape,  # feature
    _unescape,  # eval_run_id
    _unescape,  # eval_case_id
)
