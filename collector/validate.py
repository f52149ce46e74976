"""What the collector accepts, checked before it acknowledges anything (README: "Collector guarantees").

- Key columns (project, tenant, user, feature, eval run and case ids, model) are indexed or grouped
  on: longer than ``max_key_chars`` rejects the span, since a cut would merge distinct values.
- Free text (span, service and scope names, status message) is cut to ``max_text_chars``, ending in
  ``TRUNCATED``; the attributes JSON keeps every original value.
- Token counts are integers in [0, ``max_tokens``]; costs and engine times finite numbers in
  [0, ``max_cost_usd``] / [0, ``max_duration_s``]: anything else present rejects the span. Bounded
  values keep every sum the dashboard takes far from overflowing. A number sent as text is read only
  when written as JSON writes one (counts: ASCII digits, no leading zero).
- A span starts within [now - ``max_age_s``, now + ``max_future_s``], ends no earlier than it starts
  and lasts at most ``max_duration_s``; otherwise it is rejected (never clamped: a wrong time would
  put it in the wrong day and distort latency). A log record's time is held to the same window.
"""

import contextlib
import math
import re
from dataclasses import dataclass
from typing import Any

from evallens.settings.collector import DEFAULT_MAX_KEY_CHARS

TRUNCATED = "…"
NS_PER_S = 1_000_000_000
# Span rollups are keyed by (project, day, model, tenant, feature, eval): a btree takes 2,704 bytes
# a row, about 33 of them overhead. Keys of four-byte characters at ``max_key_chars`` overflow it.
MAX_ROLLUP_KEY_BYTES = 2560
# A number as JSON (so OTLP/JSON, and Python's repr) writes it. float() and int() read much more as
# client text: "1_000", " 1.5\n", "+1", ".5", "١٢" (Arabic-Indic digits), "１２" (fullwidth); such a
# value is refused as any other unreadable one is, not stored as a number the client never wrote.
DECIMAL_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WHOLE_NUMBER_TEXT = re.compile(r"0|[1-9][0-9]*")
TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8


def invalid_id_reason(which: str, value: bytes, size: int, *, where: str = "", non_zero: bool = True) -> str:
    """Why the id ``value`` (``which``: "trace id", ...) is refused: it needs ``size`` bytes, not all zero
    when ``non_zero``; its length is said when wrong. ``where`` names its span or trace."""
    wrong = "" if len(value) == size else f" of {len(value)} bytes"
    need = f"{size} non-zero bytes" if non_zero else f"{size} bytes"
    return f"invalid {which} {value.hex()!r}{wrong}{where} (need {need})"


class InvalidSpan(ValueError):
    """A span that cannot be stored; its message goes into ``partial_success``."""


class TooManyRecords(ValueError):
    """One request holds more spans or log records than ``max_spans_per_request``."""


class SpansTooLarge(ValueError):
    """One request's spans, as the rows the writer stores, take more than ``max_packed_bytes``."""


@dataclass(frozen=True, slots=True)
class SpanLimits:
    """Everything ``validate`` bounds, and the most spans one export request may hold and the bytes
    their rows may take."""

    max_age_s: float = 365 * 86_400
    max_future_s: float = 86_400
    max_duration_s: float = 7 * 86_400
    max_key_chars: int = DEFAULT_MAX_KEY_CHARS
    max_text_chars: int = 1024
    max_tokens: int = 1_000_000_000
    max_cost_usd: float = 1_000_000.0
    max_concurrent_requests: int = 1_000_000
    max_spans_per_request: int = 500_000  # and log records
    max_packed_bytes: int = 128 * 1024 * 1024  # the queue's bytes: more could never wait in it


def check_record_count(num_records: int, limits: SpanLimits, called: str) -> None:
    """``TooManyRecords`` when a request holds more records (``called``: spans, log records) than one
    may; counted before any is built."""
    if num_records > limits.max_spans_per_request:
        raise TooManyRecords(
            f"the request holds {num_records} {called}; at most {limits.max_spans_per_request} "
            "per request: send smaller batches"
        )


def check_entry_counts(num_resources: int, num_scopes: int, limits: SpanLimits, called: str) -> None:
    """``TooManyRecords`` when a request holds more resource entries, or scope entries, than it may hold
    records (``called``: spans, log records): reading one costs a decode worker about what a record
    does, empty or not. They may be counted only until they pass the cap."""
    cap = limits.max_spans_per_request
    for which, num_entries in (("resource", num_resources), ("scope", num_scopes)):
        if num_entries > cap:
            raise TooManyRecords(
                f"the request holds more than {cap} {which} entries; at most {cap} per request, as "
                f"{called}: send smaller batches"
            )


def check_event_count(num_events: int, limits: SpanLimits) -> None:
    """``TooManyRecords`` when a request's spans hold more events together than it may hold spans: a
    worker made each a Python dict (8 million empty ones fit in 16 MiB: 3.5 GB). ``num_events`` may be
    counted only until it passes the cap."""
    cap = limits.max_spans_per_request
    if num_events > cap:
        raise TooManyRecords(
            f"the request holds more than {cap} span events; at most {cap} per request, as spans: "
            "send smaller batches"
        )


def key_text(name: str, value: Any, limits: SpanLimits) -> str | None:
    """A key column's value: a non-empty string (numbers as text), None when absent or not text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        return None
    if len(value) > limits.max_key_chars:
        raise InvalidSpan(f"{name} is {len(value)} characters long; at most {limits.max_key_chars} are kept")
    return value


def check_rollup_key(project: str, model: str | None, tenant: str | None, feature: str | None) -> None:
    """``InvalidSpan`` when the span's rollup key is wider than PostgreSQL can index: it refused each
    such span alone (SQLSTATE 54000), bisecting it out of a flush that other clients' spans waited on."""
    keys = [key for key in (project, model, tenant, feature) if key]
    if sum(map(len, keys)) * 4 <= MAX_ROLLUP_KEY_BYTES:  # no UTF-8 character is wider: the usual case
        return
    num_bytes = sum(len(key.encode()) for key in keys)
    if num_bytes > MAX_ROLLUP_KEY_BYTES:
        raise InvalidSpan(
            f"project, model, tenant and feature together are {num_bytes} bytes of UTF-8; "
            f"at most {MAX_ROLLUP_KEY_BYTES} can be indexed"
        )


def free_text(value: str, limits: SpanLimits) -> str:
    """``value`` cut to ``max_text_chars`` (ending in ``TRUNCATED`` when cut)."""
    if len(value) <= limits.max_text_chars:
        return value
    return value[: limits.max_text_chars - len(TRUNCATED)] + TRUNCATED


def count(name: str, value: Any, maximum: int) -> int | None:
    """A count in [0, ``maximum``] (integers, integral floats, whole numbers as JSON writes them); None
    when absent."""
    if value is None:
        return None
    number: Any = value
    is_whole_float = isinstance(value, float) and math.isfinite(value) and value.is_integer()
    if is_whole_float or (isinstance(value, str) and _is_whole_number_text(value, maximum)):
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= maximum:
        raise InvalidSpan(f"{name} must be a whole number from 0 to {maximum}, not {_shown(value)}")
    return number


def _is_whole_number_text(text: str, maximum: int) -> bool:
    """A whole number as JSON writes it, short enough for ``int``: ``int`` refuses digit strings over
    4,300 characters; a longer one is above ``maximum`` anyway."""
    return len(text) <= len(str(maximum)) and _WHOLE_NUMBER_TEXT.fullmatch(text) is not None


def amount(name: str, value: Any, maximum: float) -> float | None:
    """A finite number in [0, ``maximum``] (numbers, or numbers as JSON writes them; -0 as 0); None when
    absent."""
    if value is None:
        return None
    number = math.nan
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if is_number or (isinstance(value, str) and DECIMAL_TEXT.fullmatch(value)):
        with contextlib.suppress(OverflowError):  # an int past float's range
            number = float(value)
    if not (math.isfinite(number) and 0 <= number <= maximum):
        raise InvalidSpan(f"{name} must be a number from 0 to {maximum:g}, not {_shown(value)}")
    # -0.0 is not below 0, but PostgreSQL keeps it, and a cost of it (or one of an engine time of it,
    # times a GPU-hour price) read "-0"
    return number + 0.0


def time_window(limits: SpanLimits, now_ns: int) -> tuple[int, int]:
    """The times accepted at ``now_ns``: [now - ``max_age_s``, now + ``max_future_s``], in ns."""
    return now_ns - int(limits.max_age_s * NS_PER_S), now_ns + int(limits.max_future_s * NS_PER_S)


def check_time(what: str, time_ns: int, window: tuple[int, int]) -> None:
    """``InvalidSpan`` unless ``time_ns`` (``what``: "span ...: start time", "time") is in ``window``."""
    if not window[0] <= time_ns <= window[1]:
        raise InvalidSpan(f"{what} {time_ns} ns is outside the accepted window")


def check_times(
    span_id: str, start_ns: int, end_ns: int, window: tuple[int, int], limits: SpanLimits
) -> None:
    """``InvalidSpan`` unless the span starts inside ``window`` and ends within ``max_duration_s``."""
    check_time(f"span {span_id}: start time", start_ns, window)
    if end_ns < start_ns:
        raise InvalidSpan(f"span {span_id}: end time is before start time")
    if end_ns - start_ns > limits.max_duration_s * 1e9:
        raise InvalidSpan(
            f"span {span_id}: lasts {(end_ns - start_ns) / 1e9:.0f} s; at most {limits.max_duration_s:g} s"
        )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
