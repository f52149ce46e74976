"""Finding 1 of issue 14: a span PostgreSQL refuses is quarantined with its reason; it never holds
back other spans (of any project), never reads as "database down", and is never silently dropped."""

import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlalchemy import event
from typer.testing import CliRunner

from collector.copy_rows import copy_rows
from collector.quarantine import DeadLetters, Quarantine, isolate
from collector.quarantine_admin import RetryReport, retry_quarantine
from collector.records import SpanRecord
from collector.runtime import Collector
from collector.spool import Spool
from collector.stats import CollectorStats
from collector.write import DatabaseDown, Refusal, SpanWriter
from evallens.app.cli import create_cli
from evallens.db import create_db_engine
from evallens.telemetry import attributes as names
from tests.collector.conftest import OwnPostgres, collector_settings, count_spans, make_request, make_span

PROTOBUF = {"content-type": "application/x-protobuf"}
# An index a user added on an attribute; a random (incompressible) value this long cannot be a
# btree index row: PostgreSQL refuses the row with SQLSTATE 54000, which psycopg raises as the same
# OperationalError class as a lost connection.
BLOB_INDEX = "CREATE INDEX spans_blob ON spans ((attributes ->> 'blob'))"


def poison_attributes() -> dict[str, str]:
    return {"blob": secrets.token_hex(4000)}


def add_blob_index(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(BLOB_INDEX)


def quarantined(database_url: str) -> list[tuple[str, str, str, dict[str, object]]]:
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT project, span_id, reason, span FROM collector_quarantine ORDER BY id"
        ).fetchall()
    return [(row[0], row[1], row[2], row[3]) for row in rows]


def wait_for(condition: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_poison_span_is_quarantined_and_the_rest_stored(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    add_blob_index(database_url)
    collector = make_collector(database_url)
    base = f"http://127.0.0.1:{collector.http_port}"
    spans = [make_span(i, attributes={names.PROJECT: "alpha"}) for i in range(10)]
    spans.insert(4, make_span(99, attributes={names.PROJECT: "alpha", **poison_attributes()}))
    response = httpx.post(
        f"{base}/v1/traces", content=make_request(spans).SerializeToString(), headers=PROTOBUF
    )

    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 1
    assert "quarantine" in partial.error_message and "54000" in partial.error_message
    assert count_spans(database_url) == 10
    ((project, span_id, reason, span),) = quarantined(database_url)
    assert (project, span_id) == ("alpha", (100).to_bytes(8, "big").hex())
    assert reason.startswith("SQLSTATE 54000") and "index row" in reason
    assert span["name"] == "span-99" and len(str(span["attributes"]["blob"])) == 8000  # type: ignore[index]

    # another project's spans right after are stored at once; PostgreSQL is not taken for down
    other = make_request([make_span(i, attributes={names.PROJECT: "beta"}) for i in range(200, 205)])
    assert (
        httpx.post(f"{base}/v1/traces", content=other.SerializeToString(), headers=PROTOBUF).status_code
        == 200
    )
    assert count_spans(database_url) == 15
    health = httpx.get(f"{base}/healthz").json()
    assert health["ok"] and health["database_up"] and health["quarantined_spans"] == 1
    assert health["spooled_bytes"] == 0
    assert "evallens_collector_spans_quarantined_total 1.0" in httpx.get(f"{base}/metrics").text


def test_poison_in_the_spool_no_longer_blocks_replay(database_url: str, tmp_path: Path) -> None:
    add_blob_index(database_url)
    settings = collector_settings(database_url, tmp_path)
    now = time.time_ns()
    good = [_record(i, now, {}) for i in range(20)]
    # spooled while PostgreSQL was down: one poison span among good ones, acknowledged long ago
    spooled = copy_rows(good[:10] + [_record(50, now, poison_attributes())] + good[10:])
    Spool(settings.spool_dir, 10**9).append(spooled)
    collector = Collector(settings, database_url)
    collector.start_in_background()
    try:
        wait_for(lambda: collector.health()["spooled_bytes"] == 0)
        assert count_spans(database_url) == 20
        assert [row[1] for row in quarantined(database_url)] == [(51).to_bytes(8, "big").hex()]
        assert collector.health()["database_up"] is True
    finally:
        collector.stop()


def _record(index: int, start_ns: int, attributes: dict[str, str]) -> SpanRecord:
    return SpanRecord(
        trace_id=(index + 1).to_bytes(16, "big").hex(),
        span_id=(index + 1).to_bytes(8, "big").hex(),
        start_time_ns=start_ns,
        end_time_ns=start_ns + 1000,
        parent_span_id=None,
        name=f"spooled-{index}",
        kind=1,
        service_name="svc",
        scope_name=None,
        scope_version=None,
        status_code=0,
        status_message=None,
        attributes=dict(attributes),
        resource={"service.name": "svc"},
        events=[],
    )


def test_quarantine_cli_lists_retries_after_a_fix_and_drops(
    database_url: str,
    make_collector: Callable[..., Collector],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    add_blob_index(database_url)
    collector = make_collector(database_url)
    spans = [make_span(i, attributes={names.PROJECT: "alpha", **poison_attributes()}) for i in range(3)]
    spans.append(make_span(9, attributes={names.PROJECT: "beta", **poison_attributes()}))
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    assert (
        httpx.post(url, content=make_request(spans).SerializeToString(), headers=PROTOBUF).status_code == 200
    )
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    monkeypatch.setenv("EVALLENS_DATA_DIR", str(tmp_path / "cli"))
    cli, runner = create_cli(), CliRunner()

    listed = runner.invoke(cli, ["collector", "quarantine", "list", "--project", "alpha", "--json"])
    assert listed.exit_code == 0, listed.output
    listing = orjson.loads(listed.output)
    assert listing["total"] == 3 and {entry["name"] for entry in listing["entries"]} == {
        "span-0",
        "span-1",
        "span-2",
    }
    assert all(entry["reason"].startswith("SQLSTATE 54000") for entry in listing["entries"])
    table = runner.invoke(cli, ["collector", "quarantine", "list"])
    assert table.exit_code == 0 and "4 quarantined spans" in table.output
    # piped, each entry is one line with its whole reason, not one cut to fit 200 columns
    assert all(entry["reason"] in table.output for entry in listing["entries"]), table.output

    still = runner.invoke(cli, ["collector", "quarantine", "retry", "--all", "--project", "alpha"])
    assert still.exit_code == 0 and "0 stored, 3 still refused" in still.output
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("DROP INDEX spans_blob")  # the operator fixes the cause
    first = listing["entries"][0]["id"]
    retried = runner.invoke(cli, ["collector", "quarantine", "retry", str(first)])
    assert retried.exit_code == 0 and "1 stored, 0 still refused" in retried.output
    assert (
        runner.invoke(cli, ["collector", "quarantine", "retry", "--all", "--project", "alpha"]).exit_code == 0
    )
    assert count_spans(database_url) == 3 and len(quarantined(database_url)) == 1  # beta's is left

    nothing = runner.invoke(cli, ["collector", "quarantine", "drop"])
    assert nothing.exit_code != 0 and "--all" in str(nothing.exception)
    dropped = runner.invoke(cli, ["collector", "quarantine", "drop", "--all"])
    assert dropped.exit_code == 0 and "1 quarantined spans dropped" in dropped.output
    assert quarantined(database_url) == []


def test_refusals_go_to_a_dead_letter_file_while_postgres_is_away(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    """Rows refused just before PostgreSQL went away are kept on disk, then moved into the table."""
    add_blob_index(own_postgres.url)
    writer, stats = SpanWriter(own_postgres.url), CollectorStats()
    keeper = Quarantine(writer, DeadLetters(tmp_path / "dead"), stats)
    now = time.time_ns()
    try:
        refusals = isolate(writer, copy_rows([_record(1, now, {}), _record(2, now, poison_attributes())]))
        assert [refusal.span.span_id for refusal in refusals] == [(3).to_bytes(8, "big").hex()]
        own_postgres.stop()
        keeper.put(refusals)  # the table is unreachable: an fsync'd file instead
        assert keeper.num_files == 1 and keeper.waiting and keeper.num_quarantined == 1
        with pytest.raises(DatabaseDown):
            keeper.import_one()
        assert keeper.num_files == 1  # kept until the table has it
        own_postgres.start()
        assert keeper.import_one() is True
        assert keeper.num_files == 0 and not keeper.waiting
        ((project, span_id, reason, span),) = quarantined(own_postgres.url)
        assert (project, span_id, span["name"]) == ("default", (3).to_bytes(8, "big").hex(), "spooled-2")
        assert reason.startswith("SQLSTATE 54000")
        assert count_spans(own_postgres.url) == 1
    finally:
        writer.close()


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--limit", str(2**63)],
        ["retry", str(2**63)],
        ["retry", "--all", "--batch-size", str(2**63)],
        ["drop", "1", str(2**63)],
    ],
    ids=["list-limit", "retry-id", "retry-batch-size", "drop-id"],
)
def test_quarantine_commands_refuse_numbers_postgres_cannot_hold(
    args: list[str], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A limit or an id past PostgreSQL's bigint failed inside the query: a traceback (DataError), not a
    usage error naming the option."""
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    refused = CliRunner().invoke(create_cli(), ["collector", "quarantine", *args])
    assert refused.exit_code == 2, (refused.output, refused.exception)
    assert "Invalid value" in refused.output


# Logs the transaction of each statement that stores spans (a real trigger).
LOG_STORED = """
CREATE TABLE stored (txid bigint, span_id text);
CREATE FUNCTION log_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stored SELECT txid_current(), span_id FROM new_spans;
  RETURN NULL;
END $$;
CREATE TRIGGER log_stored AFTER INSERT ON spans REFERENCING NEW TABLE AS new_spans
  FOR EACH STATEMENT EXECUTE FUNCTION log_stored();
"""

# Logs, for each quarantined span a retry settles (stored: deleted; still refused: its reason updated),
# and for each span stored, the transaction that did it (real triggers).
LOG_SETTLED = (
    """
CREATE TABLE settled (txid bigint, op text, quarantine_id bigint, span_id text);
CREATE FUNCTION log_settled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO settled VALUES (txid_current(), TG_OP, OLD.id, OLD.span_id);
  RETURN NULL;
END $$;
CREATE TRIGGER log_settled AFTER UPDATE OR DELETE ON collector_quarantine
  FOR EACH ROW EXECUTE FUNCTION log_settled();
"""
    + LOG_STORED
)


def test_a_retry_larger_than_one_batch_reads_and_settles_a_batch_at_a_time(database_url: str) -> None:
    """A retry read every selected span into memory at once (a quarantine of millions exhausted it) and
    settled them all at the end. Now it goes ``batch_size`` spans at a time by id, and reports and keeps
    the same as before: a stored span leaves the quarantine in the transaction that stored it, and the
    new reasons of a batch's spans still refused are set in one transaction."""
    add_blob_index(database_url)
    now = time.time_ns()
    poison = {2, 5, 9}  # still refused: in the first, second and last batch
    writer = SpanWriter(database_url)
    try:
        writer.quarantine(
            [
                Refusal(_record(i, now, poison_attributes() if i in poison else {}), "earlier")
                for i in range(10)
            ]
        )
    finally:
        writer.close()
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(LOG_SETTLED)
        ids = [row[0] for row in connection.execute("SELECT id FROM collector_quarantine ORDER BY id")]
    engine = create_db_engine(database_url)
    rows_read: list[int] = []

    @event.listens_for(engine, "after_cursor_execute")
    def count_rows_read(_c: Any, cursor: Any, statement: str, _p: Any, _x: Any, _m: bool) -> None:
        if statement.lstrip().startswith("SELECT") and "collector_quarantine.span" in statement:
            rows_read.append(cursor.rowcount)

    try:
        report = retry_quarantine(engine, database_url, [], True, None, max_new_days=8, batch_size=4)
    finally:
        engine.dispose()

    assert report == RetryReport(num_stored=7, num_still_refused=3)
    assert rows_read == [4, 4, 2]
    assert count_spans(database_url) == 7
    kept = quarantined(database_url)
    assert sorted(str(row[3]["name"]) for row in kept) == [f"spooled-{i}" for i in sorted(poison)]
    assert all(row[2].startswith("SQLSTATE 54000") for row in kept)
    with psycopg.connect(database_url) as connection:
        settled = connection.execute("SELECT txid, op, quarantine_id, span_id FROM settled").fetchall()
        stored: dict[str, int] = dict(connection.execute("SELECT span_id, txid FROM stored").fetchall())
    # each span settled once, stored or kept, never both
    assert sorted(row[2] for row in settled) == ids
    deleted = {span_id: txid for txid, op, _, span_id in settled if op == "DELETE"}
    assert deleted == stored  # each left the quarantine in the transaction that stored it
    updated: dict[int, list[int]] = {}
    for txid, op, quarantine_id, _ in settled:
        if op == "UPDATE":
            updated.setdefault(txid, []).append(quarantine_id)
    assert sorted(updated.values()) == [[ids[at]] for at in sorted(poison)]  # one transaction a batch


# Refuses deleting from the quarantine while ``fail_settle`` has a row: the settle step of a retry
# fails after PostgreSQL took its spans, as a crash between the two steps would leave them.
FAIL_SETTLE = """
CREATE TABLE fail_settle (on_purpose boolean);
INSERT INTO fail_settle VALUES (true);
CREATE FUNCTION fail_settle() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM fail_settle) THEN
    RAISE EXCEPTION 'settle failed on purpose';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER fail_settle AFTER DELETE ON collector_quarantine
  FOR EACH STATEMENT EXECUTE FUNCTION fail_settle();
"""


def test_a_retry_whose_settle_fails_leaves_no_span_both_stored_and_quarantined(database_url: str) -> None:
    """A retry wrote a batch into ``spans`` and then deleted it from the quarantine in a second
    transaction: when that one failed (or the process died between the two), the batch stayed both
    stored and quarantined. Now the spans are stored and leave the quarantine in one transaction: a
    failure keeps them quarantined only, and the next retry stores each once and empties it."""
    now = time.time_ns()
    spans = [_record(i, now, {}) for i in range(6)]
    writer = SpanWriter(database_url)
    try:
        writer.quarantine([Refusal(span, "earlier") for span in spans])
    finally:
        writer.close()
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(FAIL_SETTLE)
    engine = create_db_engine(database_url)
    try:
        failed = retry_quarantine(engine, database_url, [], True, None, max_new_days=8, batch_size=4)

        assert failed == RetryReport(num_stored=0, num_still_refused=6)
        assert count_spans(database_url) == 0
        kept = quarantined(database_url)
        assert len(kept) == 6 and all("settle failed on purpose" in row[2] for row in kept)

        with psycopg.connect(database_url, autocommit=True) as connection:
            connection.execute("DELETE FROM fail_settle")
        assert retry_quarantine(engine, database_url, [], True, None, max_new_days=8, batch_size=4) == (
            RetryReport(num_stored=6, num_still_refused=0)
        )
    finally:
        engine.dispose()
    assert quarantined(database_url) == []
    with psycopg.connect(database_url) as connection:
        stored = connection.execute("SELECT span_id, count(*) FROM spans GROUP BY span_id").fetchall()
        num_spans = connection.execute("SELECT sum(num_spans) FROM trace_summaries").fetchone()
    assert sorted(stored) == sorted((span.span_id, 1) for span in spans)
    assert num_spans == (6,)  # the summaries folded each span once


@pytest.mark.parametrize("batch_size", ["0", "-3", "many"])
def test_a_retry_batch_size_that_is_not_a_positive_whole_number_is_a_usage_error(
    batch_size: str, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    args = ["collector", "quarantine", "retry", "--all", "--batch-size", batch_size]
    refused = CliRunner().invoke(create_cli(), args)
    assert refused.exit_code == 2, (refused.output, refused.exception)
    assert "Invalid value for '--batch-size'" in refused.output


def test_a_retry_writes_batch_size_spans_at_a_time(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry batch was a constant (1000) no one could change: ``--batch-size`` sets it."""
    now = time.time_ns()
    writer = SpanWriter(database_url)
    try:
        writer.quarantine([Refusal(_record(i, now, {}), "earlier") for i in range(5)])
    finally:
        writer.close()
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(LOG_STORED)
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    cli, runner = create_cli(), CliRunner()
    assert "--batch-size" in runner.invoke(cli, ["collector", "quarantine", "retry", "--help"]).output

    retried = runner.invoke(cli, ["collector", "quarantine", "retry", "--all", "--batch-size", "2"])

    assert retried.exit_code == 0 and "5 stored, 0 still refused" in retried.output, retried.output
    with psycopg.connect(database_url) as connection:
        batches = connection.execute("SELECT count(*) FROM stored GROUP BY txid ORDER BY min(span_id)")
        assert [row[0] for row in batches] == [2, 2, 1]
    assert quarantined(database_url) == []
