"""One client's spans spread over many days: each flush creates a bounded number of daily partitions
(each locks ``spans`` while it is made), and nothing acknowledged is lost."""

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from typer.testing import CliRunner

from collector.copy_rows import copy_rows
from collector.quarantine import isolate
from collector.runtime import Collector
from collector.spool import Spool
from collector.write import Refusal, SpanWriter, share_out
from evallens.app.cli import create_cli
from evallens.db import create_db_engine
from evallens.db.partitions import create_span_partitions, list_span_partitions, partition_name
from evallens.telemetry import attributes as names
from tests.collector.conftest import collector_settings, count_spans, fetch_spans, make_request, make_span
from tests.collector.test_poison import _record, add_blob_index, poison_attributes, quarantined, wait_for

PROTOBUF = {"content-type": "application/x-protobuf"}
NS_PER_DAY = 86_400 * 10**9


def partitions(database_url: str) -> list[str]:
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            return list_span_partitions(connection)
    finally:
        engine.dispose()


def days_ago(num_days: int) -> str:
    return partition_name(datetime.now(UTC).date() - timedelta(days=num_days))


def test_a_year_of_days_in_one_request_creates_a_flush_s_share_and_quarantines_the_rest(
    database_url: str,
    make_collector: Callable[..., Collector],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    collector = make_collector(database_url, collector_max_new_days_per_flush=8)
    base = f"http://127.0.0.1:{collector.http_port}"
    now = time.time_ns()
    # noon of each of the last 364 days: one span a day (a day's end would drift into the next)
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    flood = [make_span(i, start_ns=noon - i * NS_PER_DAY) for i in range(1, 365)]
    answer = httpx.post(
        f"{base}/v1/traces", content=make_request(flood).SerializeToString(), headers=PROTOBUF, timeout=60
    )

    assert answer.status_code == 200
    partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_spans == 364 - 8
    assert "stored in the quarantine: no span partition for" in partial.error_message
    assert "at most 8 new daily partitions" in partial.error_message
    # the eight days nearest today, and no more
    assert partitions(database_url) == sorted(days_ago(n) for n in range(1, 9))
    assert count_spans(database_url) == 8
    kept = quarantined(database_url)
    assert len(kept) == 364 - 8 and all("no span partition for" in row[2] for row in kept)

    # another client's spans of today still get their partition and are stored at once
    today = make_request([make_span(1000 + i, attributes={names.PROJECT: "beta"}) for i in range(5)])
    assert httpx.post(f"{base}/v1/traces", content=today.SerializeToString(), headers=PROTOBUF).is_success
    assert count_spans(database_url) == 8 + 5

    # the operator stores the rest: nothing acknowledged was lost
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    monkeypatch.setenv("EVALLENS_DATA_DIR", str(tmp_path / "cli"))
    retried = CliRunner().invoke(create_cli(), ["collector", "quarantine", "retry", "--all"])
    assert retried.exit_code == 0 and "356 stored, 0 still refused" in retried.output, retried.output
    assert count_spans(database_url) == 364 + 5 and quarantined(database_url) == []


def test_other_spans_of_the_flush_are_stored_and_new_days_nearest_today_come_first(
    database_url: str,
) -> None:
    now = time.time_ns()
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    flood = [_record(i, noon - (10 + i) * NS_PER_DAY, {}) for i in range(30)]  # 10 to 39 days ago
    other = [_record(100 + i, now, {}) for i in range(3)]  # another client's, today
    yesterday = _record(200, noon - NS_PER_DAY, {})
    writer = SpanWriter(database_url, max_new_days=3)
    try:
        refusals = isolate(writer, copy_rows([*flood[:15], *other, *flood[15:], yesterday]))
    finally:
        writer.close()

    assert partitions(database_url) == sorted([days_ago(0), days_ago(1), days_ago(10)])
    assert count_spans(database_url) == 3 + 1 + 1
    assert len(refusals) == 29 and all(refusal.partition_missing for refusal in refusals)
    # each refusal names its own span, at its place in the batch
    batch = [*flood[:15], *other, *flood[15:], yesterday]
    assert all(batch[refusal.index].span_id == refusal.span.span_id for refusal in refusals)
    assert {refusal.span.span_id for refusal in refusals} == {span.span_id for span in flood[1:]}


def test_a_flush_s_new_days_are_shared_out_among_its_projects(database_url: str) -> None:
    """The new days of a flush went to the nearest days, whoever's spans they held: one project's spans
    over 30 days sent beside another project's spans of distant days pushed the other project's into
    the quarantine. Now each project in turn gets its nearest new day (a day two share counts for
    both), so a flood takes its share of the partitions, not every one."""
    now = time.time_ns()
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    flood = [replace(_record(i, noon - (10 + i) * NS_PER_DAY, {}), project="flood") for i in range(30)]
    quiet = [
        replace(_record(100 + i, noon - days * NS_PER_DAY, {}), project="quiet")
        for i, days in enumerate((60, 50, 12))
    ]
    writer = SpanWriter(database_url, max_new_days=4)
    try:
        refusals = isolate(writer, copy_rows([*flood[:10], *quiet, *flood[10:]]))
    finally:
        writer.close()

    # flood's 10 and quiet's 12 (flood's too), then flood's 11 and quiet's 50; quiet's 60 waits
    assert partitions(database_url) == sorted(days_ago(n) for n in (10, 11, 12, 50))
    assert {row["span_id"] for row in fetch_spans(database_url, "project = 'quiet'")} == {
        span.span_id for span in quiet[1:]
    }
    assert count_spans(database_url) == 3 + 2
    assert len(refusals) == 28 and all(refusal.partition_missing for refusal in refusals)
    assert [refusal.span.project for refusal in refusals].count("quiet") == 1


def test_yesterday_today_and_tomorrow_come_before_any_project_s_turn() -> None:
    """Shared out by project alone, nine projects' distant days would take a cap of 8 in the first
    turn, and a tenth project's spans of today and yesterday would wait in the quarantine."""
    today = date(2026, 6, 15)
    days_of = {f"p{n}".encode(): {today - timedelta(days=100 + n)} for n in range(9)}
    days_of[b"live"] = {today, today - timedelta(days=1), today - timedelta(days=300)}
    shared = share_out(days_of, 8, today)
    assert shared[:2] == [today, today - timedelta(days=1)]
    # then a turn each, the project with the nearest day first: its own next, 300 days ago
    assert shared[2:] == [today - timedelta(days=n) for n in (300, 100, 101, 102, 103, 104)]
    assert share_out(days_of, 1, today) == [today]


def test_a_spooled_batch_over_many_days_is_replayed_over_several_flushes(
    database_url: str, tmp_path: Path
) -> None:
    """Acknowledged while PostgreSQL was away: replayed a few days' partitions at a time, never
    quarantined for want of one."""
    settings = collector_settings(database_url, tmp_path, collector_max_new_days_per_flush=3)
    now = time.time_ns()
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    spooled = copy_rows([_record(i, noon - i * NS_PER_DAY, {}) for i in range(20)])
    Spool(settings.spool_dir, 10**9).append(spooled)
    collector = Collector(settings, database_url)
    collector.start_in_background()
    try:
        wait_for(lambda: collector.health()["spooled_bytes"] == 0)
        assert count_spans(database_url) == 20
        assert quarantined(database_url) == []
        assert len(partitions(database_url)) == 20
    finally:
        collector.stop()


def test_a_partition_made_elsewhere_meanwhile_is_not_made_again(database_url: str) -> None:
    """A partition another process made meanwhile is seen: the writer's cache is not the truth."""
    now = time.time_ns()
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    writer = SpanWriter(database_url, max_new_days=1)
    try:
        assert isolate(writer, copy_rows([_record(1, now, {})])) == []
        with psycopg.connect(database_url, autocommit=True) as connection:
            day = (datetime.now(UTC) - timedelta(days=5)).date()
            connection.execute(
                f"CREATE TABLE {partition_name(day)} PARTITION OF spans FOR VALUES FROM "
                f"('{day} 00:00:00+00') TO ('{day + timedelta(days=1)} 00:00:00+00')"
            )
        spans = [_record(2, noon - 5 * NS_PER_DAY, {}), _record(3, noon - 2 * NS_PER_DAY, {})]
        assert isolate(writer, copy_rows(spans)) == []
    finally:
        writer.close()
    assert count_spans(database_url) == 3


# Logs, for each CREATE TABLE of a span partition, the transaction that made it (a real event trigger).
LOG_PARTITIONS_MADE = """
CREATE TABLE partitions_made (txid bigint, name text);
CREATE FUNCTION log_partitions_made() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO partitions_made SELECT txid_current(), object_identity FROM pg_event_trigger_ddl_commands()
  WHERE object_type = 'table' AND object_identity LIKE '%spans_p%';
END $$;
CREATE EVENT TRIGGER log_partitions_made ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION log_partitions_made();
"""


def test_a_quarantine_retry_makes_a_flush_s_share_of_partitions_a_transaction(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`quarantine retry --all` made every partition its spans needed in one transaction (some 366 for
    a year's spans), holding ``spans`` locked while every flush waited. Now each of its transactions
    makes at most EVALLENS_COLLECTOR_MAX_NEW_DAYS_PER_FLUSH of them, and one retry still stores all."""
    now = time.time_ns()
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    writer = SpanWriter(database_url)
    try:
        writer.quarantine(
            [Refusal(_record(i, noon - (i + 2) * NS_PER_DAY, {}), "earlier") for i in range(30)]
        )
    finally:
        writer.close()
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(LOG_PARTITIONS_MADE)
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    monkeypatch.setenv("EVALLENS_DATA_DIR", str(tmp_path / "cli"))
    monkeypatch.setenv("EVALLENS_COLLECTOR_MAX_NEW_DAYS_PER_FLUSH", "4")

    retried = CliRunner().invoke(create_cli(), ["collector", "quarantine", "retry", "--all"])

    assert retried.exit_code == 0 and "30 stored, 0 still refused" in retried.output, retried.output
    assert count_spans(database_url) == 30 and quarantined(database_url) == []
    assert partitions(database_url) == sorted(days_ago(n) for n in range(2, 32))
    with psycopg.connect(database_url) as connection:
        made = connection.execute("SELECT count(*) FROM partitions_made GROUP BY txid ORDER BY 1").fetchall()
    assert [row[0] for row in made] == [2] + [4] * 7, made


def test_a_bisected_flush_makes_no_more_new_partitions_than_the_cap(database_url: str) -> None:
    """The writer knew eight partitions an operator dropped by hand since; a flush of spans of those days
    led by a poison span was bisected, and each half's write made its own share of new partitions (seven
    in one flush with a cap of two), the first span's day left to PostgreSQL's "no partition" refusal.
    Now the halves are placed as the flush is, from one budget: two days made, the others' spans left out
    saying why, as any flush over the cap."""
    now = time.time_ns()
    noon = now - now % NS_PER_DAY + NS_PER_DAY // 2
    dropped = [(datetime.now(UTC) - timedelta(days=n)).date() for n in range(2, 10)]
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_span_partitions(connection, dropped)
    engine.dispose()
    add_blob_index(database_url)
    writer = SpanWriter(database_url, max_new_days=2)
    try:
        assert isolate(writer, copy_rows([_record(0, now, {})])) == []  # it reads the partitions there
        with psycopg.connect(database_url, autocommit=True) as connection:
            for day in dropped:
                connection.execute(f"DROP TABLE {partition_name(day)}")
            connection.execute(LOG_PARTITIONS_MADE)
        poison = _record(1, now, poison_attributes())
        spread = [_record(10 + n, noon - n * NS_PER_DAY, {}) for n in range(2, 10)]
        refusals = isolate(writer, copy_rows([poison, *spread]))
    finally:
        writer.close()

    with psycopg.connect(database_url) as connection:
        made = connection.execute("SELECT name FROM partitions_made ORDER BY name").fetchall()
    assert [row[0] for row in made] == [f"public.{days_ago(n)}" for n in (3, 2)]
    assert partitions(database_url) == sorted([days_ago(0), days_ago(2), days_ago(3)])
    assert count_spans(database_url) == 1 + 2
    assert refusals[0].index == 0 and refusals[0].reason.startswith("SQLSTATE 54000")
    left_out = refusals[1:]
    assert sorted(refusal.index for refusal in left_out) == list(range(3, 9))
    assert all(refusal.partition_missing for refusal in left_out)
    assert all("one flush creates at most 2 new daily partitions" in refusal.reason for refusal in left_out)
