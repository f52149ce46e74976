"""COPY rows encoded in the workers store exactly what psycopg's own ``write_row`` stores, and decode back."""

import time
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector.copy_rows import BadRow, CopyRows, copy_rows, decode_line, encode_spans
from collector.quarantine import isolate
from collector.records import RECORD_FIELDS, SPAN_COLUMNS, SpanRecord, datetime_from_ns
from collector.spool import Spool
from collector.validate import SpansTooLarge
from collector.write import SpanWriter

NOW = time.time_ns() // 1000 * 1000  # whole microseconds: what PostgreSQL keeps
AWKWARD = [
    "back\\slash",
    "tab\there",
    "new\nline",
    "carriage\rreturn",
    "\\N",
    "\\.",
    "",
    "ünïcödé 日本語 🚀 e\u0301",
    'quote " and \\" and \\\\ end\\',
    "\x01\x7f control",
]


def record(index: int, **fields: Any) -> SpanRecord:
    values: dict[str, Any] = {
        "trace_id": (index + 1).to_bytes(16, "big").hex(),
        "span_id": (index + 1).to_bytes(8, "big").hex(),
        "start_time_ns": NOW + index * 1000,
        "end_time_ns": NOW + index * 1000 + 1_234_000,
        "parent_span_id": None,
        "name": f"span-{index}",
        "kind": 2,
        "service_name": "svc",
        "scope_name": None,
        "scope_version": None,
        "status_code": 0,
        "status_message": None,
        "attributes": {},
        "resource": {"service.name": "svc"},
        "events": [],
    }
    values.update(fields)
    return SpanRecord(**values)


def awkward_records() -> list[SpanRecord]:
    spans = []
    for index, value in enumerate(AWKWARD):
        spans.append(
            record(
                index,
                name=value,
                parent_span_id="00000000000000ff",
                service_name=value,
                scope_name=value,
                scope_version=value,
                status_code=2,
                status_message=value,
                attributes={value: value, "n": 2**63 - 1, "f": 0.1, "nested": {"list": [value, None, True]}},
                resource={"service.name": value},
                events=[{"name": value, "time_unix_nano": NOW, "attributes": {"k": value}}],
                project=value or "p",
                model=value,
                input_tokens=index,
                output_tokens=10**9,
                cost_usd=1e-7 * index,
                tenant=value,
                user_id=value,
                feature=value,
                eval_run_id=value,
                eval_case_id=value,
            )
        )
    spans.append(record(99))  # every optional column NULL
    return spans


def reference_row(span: SpanRecord) -> tuple[Any, ...]:
    """The row as psycopg's own adapters write it (what the writer did before issue 17)."""
    values = {name: getattr(span, name) for name in RECORD_FIELDS}
    values.update(
        start_time=datetime_from_ns(span.start_time_ns),
        end_time=datetime_from_ns(span.end_time_ns),
        duration_ms=span.duration_ms,
        attributes=orjson.dumps(span.attributes).decode(),
        resource=orjson.dumps(span.resource).decode(),
        events=orjson.dumps(span.events).decode(),
    )
    return tuple(values[column] for column in SPAN_COLUMNS)


def stored(connection: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    columns = ", ".join(SPAN_COLUMNS)
    return connection.execute(f"SELECT {columns} FROM {table} ORDER BY span_id").fetchall()


def test_rows_store_what_psycopg_write_row_stores(database_url: str) -> None:
    spans = awkward_records()
    writer = SpanWriter(database_url)
    try:
        assert writer.write(copy_rows(spans)) == len(spans)
    finally:
        writer.close()
    with psycopg.connect(database_url) as connection:
        connection.execute("CREATE TEMP TABLE reference (LIKE spans)")
        with connection.cursor().copy(f"COPY reference ({', '.join(SPAN_COLUMNS)}) FROM STDIN") as copy:
            for span in spans:
                copy.write_row(reference_row(span))
        ours, theirs = stored(connection, "spans"), stored(connection, "reference")
    assert ours == theirs
    by_span = {row[1]: row for row in ours}
    tab = by_span[spans[1].span_id]
    assert tab[6] == "tab\there" and tab[13]["tab\there"] == "tab\there"
    assert by_span[spans[4].span_id][6] == "\\N"  # a value, not NULL
    assert by_span[spans[-1].span_id][5] is None and by_span[spans[-1].span_id][17] is None
    assert tab[2] == datetime_from_ns(spans[1].start_time_ns)


def test_nul_in_text_columns_becomes_replacement_character(database_url: str) -> None:
    writer = SpanWriter(database_url)
    try:
        writer.write(copy_rows([record(1, name="a\x00b", tenant="t\x00")]))
    finally:
        writer.close()
    with psycopg.connect(database_url) as connection:
        assert connection.execute("SELECT name, tenant FROM spans").fetchone() == ("a\ufffdb", "t\ufffd")


def test_lines_decode_to_the_records_they_came_from() -> None:
    spans = awkward_records()
    rows = copy_rows(spans)
    assert rows.num_rows == len(spans) and len(rows.lines()) == len(spans)
    assert rows.records() == spans


@settings(max_examples=200, deadline=None)  # type: ignore[untyped-decorator]
@given(  # type: ignore[untyped-decorator]
    name=st.text(),
    value=st.text(),
    number=st.one_of(st.none(), st.integers(0, 10**12)),
    offset_ns=st.integers(-(10**17), 10**17),
)
def test_any_text_round_trips(name: str, value: str, number: int | None, offset_ns: int) -> None:
    name, value = name.replace("\x00", "\ufffd"), value.replace("\x00", "\ufffd")
    start = (NOW + offset_ns) // 1000 * 1000
    span = record(1, name=name, attributes={value: [value]}, model=value or None, input_tokens=number)
    span.start_time_ns, span.end_time_ns = start, start + 5000
    (rows,) = encode_spans([span])
    assert rows.data.count(b"\n") == 1
    assert decode_line(rows.lines()[0]) == span


def test_chunks_and_days() -> None:
    day_ns = 86_400 * 10**9
    spans = [
        record(i, start_time_ns=NOW + (i % 2) * day_ns, end_time_ns=NOW + (i % 2) * day_ns) for i in range(5)
    ]
    chunks = list(encode_spans(spans, rows_per_chunk=2))
    assert [chunk.num_rows for chunk in chunks] == [2, 2, 1]
    day = NOW // day_ns
    assert chunks[0].days == (day, day + 1) and chunks[2].days == (day,)
    joined = CopyRows.joined(chunks)
    assert joined.num_rows == 5 and joined.days == (day, day + 1) and joined.records() == spans


def test_refusals_name_their_rows(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE spans ADD CONSTRAINT short_names CHECK (length(name) < 10)")
    spans = [record(i, name="x" * (20 if i in (1, 4) else 1)) for i in range(6)]
    writer = SpanWriter(database_url)
    try:
        refusals = isolate(writer, copy_rows(spans))
    finally:
        writer.close()
    assert [(r.index, r.span.span_id) for r in refusals] == [(1, spans[1].span_id), (4, spans[4].span_id)]
    assert all(r.reason.startswith("SQLSTATE 23514") for r in refusals)
    with psycopg.connect(database_url) as connection:
        assert connection.execute("SELECT count(*) FROM spans").fetchone() == (4,)


def test_spool_reads_its_rows_and_older_json_batches(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 10**9)
    spans = awkward_records()
    rows = copy_rows(spans)
    assert Spool.read(spool.append(rows)) == rows
    legacy = tmp_path / "0-legacy.spool"  # what collectors before issue 17 spooled
    legacy.write_bytes(orjson.dumps([[getattr(span, name) for name in RECORD_FIELDS] for span in spans]))
    assert Spool.read(legacy).records() == spans
    damaged = tmp_path / "1-damaged.spool"
    damaged.write_bytes(rows.data[:-1])
    with pytest.raises(ValueError, match="cut short"):
        Spool.read(damaged)
    damaged.write_bytes(b"abc\tdef\n")
    with pytest.raises(ValueError, match="fields"):
        Spool.read(damaged)
    with pytest.raises(BadRow):
        decode_line(rows.lines()[0].replace(b"\t", b" ", 1))


@pytest.mark.parametrize("rows_per_chunk", [1, 3, 1000])
def test_rows_past_max_bytes_are_refused_counting_bytes_not_characters(rows_per_chunk: int) -> None:
    resource = {"service.name": "svc", "note": "é" * 200}  # two bytes a character in UTF-8
    spans = [record(index, resource=resource) for index in range(5)]
    num_bytes = sum(len(chunk.data) for chunk in encode_spans(spans, rows_per_chunk))

    packed = list(encode_spans(spans, rows_per_chunk, max_bytes=num_bytes))
    assert sum(chunk.num_rows for chunk in packed) == 5
    with pytest.raises(SpansTooLarge, match=f"decode to more than {num_bytes - 1} bytes"):
        list(encode_spans(spans, rows_per_chunk, max_bytes=num_bytes - 1))
