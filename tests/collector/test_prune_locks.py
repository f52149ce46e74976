"""Retention against live writers: a transaction for each partition's drop, so ingestion waits for one
drop at most; a prune that cannot get the lock on spans gives up rather than queueing every writer."""

import subprocess
import threading
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import Connection, event

from collector.retention import PruneReport, PruneRunning, one_prune, prune_spans
from evallens.db import create_db_engine, partitions
from evallens.db.partitions import PartitionLocked, create_span_partitions, list_span_partitions
from tests.evallens.test_cli_db import run_cli

TODAY = date(2026, 3, 10)
KEEP = timedelta(days=5)  # cutoff 2026-03-05: every old day goes
OLD_DAYS = [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]
INSERT_SPAN = (
    "INSERT INTO spans (trace_id, span_id, start_time, end_time, duration_ms, name, kind, status_code,"
    " attributes, resource, events, model) VALUES (%s, 'b', %s, %s, 1, 'x', 1, 0, '{}', '{}', '[]', 'm')"
)


def seed(database_url: str) -> None:
    """A partition and one trace (its summaries too) on each old day and on today."""
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_span_partitions(connection, [*OLD_DAYS, TODAY])
    engine.dispose()
    with psycopg.connect(database_url) as connection:
        for day in [*OLD_DAYS, TODAY]:
            moment = datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=12)
            connection.execute(INSERT_SPAN, (f"t{day:%d}", moment, moment))


def traces(database_url: str) -> list[str]:
    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT trace_id FROM trace_summaries ORDER BY 1").fetchall()
    return [row[0] for row in rows]


def test_a_writer_inserts_between_two_partitions_drops(database_url: str) -> None:
    """Each time the prune begins a transaction, a second session looks at what is committed; once one
    old partition is gone and the next still there, it writes a span (through spans, its summary
    trigger included) and is not kept waiting."""
    seed(database_url)
    engine = create_db_engine(database_url)
    seen_between: list[list[str]] = []
    # lock_timeout only keeps a regression from hanging this test: the prune waits in this thread
    with psycopg.connect(database_url, autocommit=True, options="-c lock_timeout=20s") as writer:

        def write_between_drops(_: Connection) -> None:
            names = [
                row[0] for row in writer.execute("SELECT relname FROM pg_class WHERE relname LIKE 'spans_p%'")
            ]
            first, second = (f"spans_p{day:%Y%m%d}" for day in OLD_DAYS[:2])
            if first not in names and second in names and not seen_between:
                now = datetime.combine(TODAY, datetime.min.time(), UTC) + timedelta(hours=13)
                writer.execute(INSERT_SPAN, ("late", now, now))
                seen_between.append(sorted(names))

        event.listen(engine, "begin", write_between_drops)
        report = prune_spans(engine, KEEP, today=TODAY)
    engine.dispose()
    assert seen_between, "no writer got in between two partitions' drops"
    assert report.dropped == [f"spans_p{day:%Y%m%d}" for day in OLD_DAYS]
    assert traces(database_url) == ["late", "t10"]


def test_a_prune_that_cannot_lock_gives_up_and_keeps_what_it_dropped(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader holding the second old partition: the first goes with its summaries, the second and
    its summaries stay whole, the prune says so in one line, and writers are not left queued."""
    seed(database_url)
    for name, value in (("LOCK_TIMEOUT_MS", 50), ("LOCK_ATTEMPTS", 2), ("LOCK_RETRY_PAUSE_S", 0)):
        monkeypatch.setattr(partitions, name, value, raising=False)
    engine = create_db_engine(database_url)
    # the server ends the reader's transaction after a while, so that a prune without a lock timeout
    # finishes (and fails this test) rather than waiting on it for ever
    with psycopg.connect(database_url, options="-c idle_in_transaction_session_timeout=30s") as reader:
        reader.execute(f"SELECT count(*) FROM spans_p{OLD_DAYS[1]:%Y%m%d}")
        with pytest.raises(PartitionLocked) as raised:
            prune_spans(engine, KEEP, today=TODAY)
        with psycopg.connect(database_url, autocommit=True, options="-c lock_timeout=20s") as writer:
            now = datetime.combine(TODAY, datetime.min.time(), UTC) + timedelta(hours=13)
            writer.execute(INSERT_SPAN, ("late", now, now))
        reader.rollback()
    with engine.connect() as connection:
        remaining = list_span_partitions(connection)
    engine.dispose()
    message = str(raised.value)
    assert f"spans_p{OLD_DAYS[1]:%Y%m%d}" in message and "1 partitions dropped before it" in message
    assert "\n" not in message
    assert remaining == [f"spans_p{day:%Y%m%d}" for day in [*OLD_DAYS[1:], TODAY]]
    assert traces(database_url) == ["late", "t02", "t03", "t10"]


def test_a_writer_is_not_kept_waiting_while_the_prune_waits_for_a_partitions_reader(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader holds the second old partition: the prune waits for it without holding spans, so a
    span of today goes in meanwhile; once the reader is done, the prune drops every old partition."""
    seed(database_url)
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT_MS", 120_000, raising=False)  # longer than this test
    engine = create_db_engine(database_url)
    held = f"spans_p{OLD_DAYS[1]:%Y%m%d}"
    reports: list[PruneReport] = []
    with (
        psycopg.connect(database_url, options="-c idle_in_transaction_session_timeout=60s") as reader,
        psycopg.connect(database_url, autocommit=True, options="-c lock_timeout=20s") as writer,
    ):
        reader.execute(f"SELECT count(*) FROM {held}")
        pruning = threading.Thread(target=lambda: reports.append(prune_spans(engine, KEEP, today=TODAY)))
        pruning.start()
        waiting = None
        while waiting is None and pruning.is_alive():  # until the prune waits for the reader
            waiting = writer.execute(
                "SELECT mode FROM pg_locks WHERE NOT granted AND relation = %s::regclass", (held,)
            ).fetchone()
            threading.Event().wait(0.05)
        assert waiting is not None
        now = datetime.combine(TODAY, datetime.min.time(), UTC) + timedelta(hours=13)
        writer.execute(INSERT_SPAN, ("late", now, now))
        reader.rollback()
        pruning.join()
    engine.dispose()
    assert [report.dropped for report in reports] == [[f"spans_p{day:%Y%m%d}" for day in OLD_DAYS]]
    assert traces(database_url) == ["late", "t10"]


def test_a_second_prune_while_one_runs_exits_2_saying_so_and_changes_nothing(database_url: str) -> None:
    """Two prunes at once: the second dropped the partitions the first had listed, and the first then
    failed on a DROP of one that "does not exist". Between the first prune's drops, a second one (the
    command, on a connection of its own) is refused in one line, and the first finishes."""
    seed(database_url)
    engine = create_db_engine(database_url)
    second: list[subprocess.CompletedProcess[str]] = []

    def prune_again_between_drops(_: Connection) -> None:
        with psycopg.connect(database_url) as watcher:
            names = [
                row[0]
                for row in watcher.execute("SELECT relname FROM pg_class WHERE relname LIKE 'spans_p%'")
            ]
        if f"spans_p{OLD_DAYS[0]:%Y%m%d}" not in names and not second:
            env = {"EVALLENS_DATABASE_URL": database_url}
            second.append(run_cli("collector", "prune", "--older-than", "1d", env=env))

    event.listen(engine, "begin", prune_again_between_drops)
    report = prune_spans(engine, KEEP, today=TODAY)
    engine.dispose()
    (result,) = second
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "evallens: error: another `evallens collector prune` of this database is running; nothing was "
        "changed, run it again once it is done"
    ]
    assert report.dropped == [f"spans_p{day:%Y%m%d}" for day in OLD_DAYS]
    assert traces(database_url) == ["t10"]


def test_prunes_one_after_the_other_both_run(database_url: str) -> None:
    """The prune lock is given back: a prune after another (or after one that failed) is not refused."""
    seed(database_url)
    engine = create_db_engine(database_url)
    try:
        assert len(prune_spans(engine, KEEP, today=TODAY).dropped) == 3
        with pytest.raises(PruneRunning), one_prune(engine), one_prune(engine):
            pass
        assert prune_spans(engine, timedelta(0), today=TODAY).dropped == []
    finally:
        engine.dispose()
