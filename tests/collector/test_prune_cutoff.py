"""Pruned days stay pruned: a prune records its cutoff, and a span of an earlier day arriving afterwards
(sent late, spooled while PostgreSQL was away, retried from the quarantine) goes to the quarantine saying
so instead of making that day's partition again."""

import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from typer.testing import CliRunner

from collector.copy_rows import copy_rows
from collector.quarantine import isolate
from collector.retention import PruneReport, prune_spans
from collector.runtime import Collector
from collector.spool import Spool
from collector.write import SpanWriter
from evallens.app.cli import create_cli
from evallens.db import create_db_engine, partitions
from evallens.db.partitions import create_span_partitions, partition_name, pruned_before
from tests.collector.conftest import collector_settings, count_spans, make_request, make_span
from tests.collector.test_partition_flood import partitions as partitions_of
from tests.collector.test_poison import _record, quarantined, wait_for

PROTOBUF = {"content-type": "application/x-protobuf"}
KEEP = timedelta(days=5)


def noon_ns(day: date) -> int:
    return int(datetime.combine(day, datetime.min.time(), UTC).timestamp() + 12 * 3600) * 10**9


def today() -> date:
    return datetime.now(UTC).date()


def make_partitions(database_url: str, days: list[date]) -> None:
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_span_partitions(connection, days)
    engine.dispose()


def prune(database_url: str) -> PruneReport:
    engine = create_db_engine(database_url)
    try:
        return prune_spans(engine, KEEP)
    finally:
        engine.dispose()


def test_a_late_span_of_a_pruned_day_is_quarantined_and_its_partition_stays_dropped(
    database_url: str,
    make_collector: Callable[..., Collector],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    old = today() - timedelta(days=10)
    make_partitions(database_url, [old, today()])
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    monkeypatch.setenv("EVALLENS_DATA_DIR", str(tmp_path / "cli"))
    pruned = CliRunner().invoke(create_cli(), ["collector", "prune", "--older-than", "5d"])
    assert pruned.exit_code == 0 and f"dropped 1 span partitions before {today() - KEEP}" in pruned.output

    collector = make_collector(database_url)
    request = make_request([make_span(0, start_ns=noon_ns(old)), make_span(1)])
    answer = httpx.post(
        f"http://127.0.0.1:{collector.http_port}/v1/traces",
        content=request.SerializeToString(),
        headers=PROTOBUF,
    )

    assert answer.status_code == 200
    partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
    reason = f"its day {old} was pruned: `evallens collector prune` dropped the spans before {today() - KEEP}"
    assert partial.rejected_spans == 1 and reason in partial.error_message, partial
    assert partitions_of(database_url) == [partition_name(today())]
    assert count_spans(database_url) == 1
    (row,) = quarantined(database_url)
    assert reason in row[2] and row[3]["name"] == "span-0"

    # the operator's retry does not bring the day back either: the span stays, with its reason
    retried = CliRunner().invoke(create_cli(), ["collector", "quarantine", "retry", "--all"])
    assert retried.exit_code == 0 and "0 stored, 1 still refused" in retried.output, retried.output
    assert partitions_of(database_url) == [partition_name(today())]
    (row,) = quarantined(database_url)
    assert reason in row[2]


def test_a_late_span_of_a_day_pruned_after_the_writer_saw_its_partition_gets_the_pruned_reason(
    database_url: str,
) -> None:
    """The writer knows the partitions it saw; the prune dropped one since: the span is placed again and
    told why, not refused with PostgreSQL's "no partition of relation"."""
    old = today() - timedelta(days=10)
    writer = SpanWriter(database_url, max_new_days=8)
    try:
        assert (
            isolate(writer, copy_rows([_record(1, noon_ns(old), {}), _record(2, time.time_ns(), {})])) == []
        )
        assert prune(database_url).dropped == [partition_name(old)]
        (refusal,) = isolate(
            writer, copy_rows([_record(3, noon_ns(old) + 1, {}), _record(4, time.time_ns(), {})])
        )
    finally:
        writer.close()
    assert refusal.span.name == "spooled-3" and not refusal.partition_missing
    assert f"its day {old} was pruned" in refusal.reason
    assert partitions_of(database_url) == [partition_name(today())]
    assert count_spans(database_url) == 2


def test_a_spooled_batch_replayed_after_a_prune_quarantines_the_pruned_day_s_spans(
    database_url: str, tmp_path: Path
) -> None:
    """Acknowledged while PostgreSQL was away, replayed after a prune: nothing lost, no day back."""
    old = today() - timedelta(days=10)
    make_partitions(database_url, [old])
    prune(database_url)
    settings = collector_settings(database_url, tmp_path)
    spooled = [_record(1, noon_ns(old), {}), _record(2, time.time_ns(), {}), _record(3, noon_ns(old) + 5, {})]
    Spool(settings.spool_dir, 10**9).append(copy_rows(spooled))
    collector = Collector(settings, database_url)
    collector.start_in_background()
    try:
        wait_for(lambda: collector.health()["spooled_bytes"] == 0)
    finally:
        collector.stop()
    assert count_spans(database_url) == 1
    kept = quarantined(database_url)
    assert sorted(str(row[3]["name"]) for row in kept) == ["spooled-1", "spooled-3"]
    assert all(f"its day {old} was pruned" in row[2] for row in kept)
    assert partitions_of(database_url) == [partition_name(today())]


def test_a_partition_made_while_a_prune_starts_is_dropped_by_that_prune(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush read the cutoff before the prune raised it and is making an old day's partition: the prune
    waits for it to commit, then drops that partition too; no later flush makes it again."""
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT_MS", 120_000, raising=False)  # longer than this test
    old = today() - timedelta(days=10)
    make_partitions(database_url, [today()])
    engine = create_db_engine(database_url)
    reports: list[PruneReport] = []
    pruning = threading.Thread(target=lambda: reports.append(prune(database_url)))
    with engine.begin() as flush, psycopg.connect(database_url, autocommit=True) as watcher:
        assert pruned_before(flush) is None
        create_span_partitions(flush, [old])
        pruning.start()
        waiting = None
        while waiting is None and pruning.is_alive():  # until the prune waits for this flush
            waiting = watcher.execute(
                "SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'advisory'"
            ).fetchone()
            threading.Event().wait(0.05)
        assert waiting is not None
    pruning.join()
    engine.dispose()
    assert [report.dropped for report in reports] == [[partition_name(old)]]
    writer = SpanWriter(database_url)
    try:
        (refusal,) = isolate(writer, copy_rows([_record(1, noon_ns(old), {})]))
    finally:
        writer.close()
    assert f"its day {old} was pruned" in refusal.reason
    assert partitions_of(database_url) == [partition_name(today())]
