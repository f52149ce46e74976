"""Price table (defaults, CLI set/list, GPU-hour costs), the Prometheus scraper, and retention."""

import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import psycopg
import pytest
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from collector.prices import (
    InvalidPrice,
    PriceBook,
    PriceEntry,
    default_prices,
    list_prices,
    seed_default_prices,
    span_cost,
)
from collector.records import SpanRecord
from collector.retention import delete_content_before, parse_age
from collector.runtime import Collector
from collector.scrape import Scraper
from collector.stats import CollectorStats
from evallens.app.cli import create_cli
from evallens.db import create_db_engine
from evallens.db.partitions import create_span_partitions, list_span_partitions
from evallens.durations import InvalidDuration
from evallens.telemetry.cost import Price

EXPOSITION = """# HELP vllm:kv_cache_usage_perc KV-cache usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="smol"} 0.25
# HELP vllm:time_to_first_token_seconds TTFT.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 3
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 5
vllm:time_to_first_token_seconds_sum 1.5
vllm:time_to_first_token_seconds_count 5
"""


def record(model: str, **fields: object) -> SpanRecord:
    values: dict[str, object] = {
        "trace_id": "1" * 32,
        "span_id": "1" * 16,
        "start_time_ns": 1_700_000_000 * 10**9,
        "end_time_ns": 1_700_000_002 * 10**9,
        "parent_span_id": None,
        "name": "gen",
        "kind": 0,
        "service_name": None,
        "scope_name": None,
        "scope_version": None,
        "status_code": 0,
        "status_message": None,
        "attributes": {},
        "resource": {},
        "events": [],
        "model": model,
    }
    values.update(fields)
    return SpanRecord(**values)  # type: ignore[arg-type]


def test_price_book_prefix_validity_and_gpu_hours() -> None:
    book = PriceBook(
        [
            PriceEntry(Price("gpt-4o", 2.5, 10.0)),
            PriceEntry(Price("gpt-4o-mini", 0.15, 0.6)),
            PriceEntry(Price("smol", gpu_hour_usd=3.6), valid_to=datetime(2020, 1, 1, tzinfo=UTC)),
            PriceEntry(Price("smol", gpu_hour_usd=7.2), valid_from=datetime(2020, 1, 1, tzinfo=UTC)),
        ]
    )
    assert book.price_for("gpt-4o-mini-2024-07-18", 0) == Price("gpt-4o-mini", 0.15, 0.6)
    assert book.price_for("gpt-4o-2024-08-06", 0) == Price("gpt-4o", 2.5, 10.0)
    assert book.price_for("llama", 0) is None
    spans = [
        record("smol", input_tokens=10, output_tokens=5, engine_time_s=1.0, concurrent_requests=4),
        record("smol", input_tokens=10, output_tokens=5),  # no engine time: the span's 2 s duration
        record("gpt-4o", input_tokens=10, output_tokens=5, cost_usd=9.0),  # a cost it carries is kept
        record("gpt-4o", input_tokens=None, output_tokens=None),
    ]
    book.tag_costs(spans)
    assert spans[0].cost_usd == pytest.approx(7.2 * 1.0 / 4 / 3600)
    assert spans[1].cost_usd == pytest.approx(7.2 * 2.0 / 3600)
    assert (spans[2].cost_usd, spans[3].cost_usd) == (9.0, None)
    assert span_cost(record("x", input_tokens=1_000_000, output_tokens=0), Price("x", 1.0, 2.0)) == 1.0


def test_prices_cli_seeds_defaults_and_set_upserts(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    cli = create_cli()
    runner = CliRunner()
    listed = runner.invoke(cli, ["prices", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert {row["model"] for row in orjson.loads(listed.output)} == {e.price.model for e in default_prices()}
    for price in ("1.5", "2.5"):  # the second set replaces the first
        result = runner.invoke(cli, ["prices", "set", "my-model", "--input", price, "--output", "4"])
        assert result.exit_code == 0, result.output
    rows = [
        row
        for row in orjson.loads(runner.invoke(cli, ["prices", "list", "--json"]).output)
        if row["model"] == "my-model"
    ]
    assert len(rows) == 1 and rows[0]["input_usd_per_mtok"] == 2.5
    refused = runner.invoke(cli, ["prices", "set", "half", "--input", "1"])
    assert refused.exit_code != 0 and "GPU-hour" in str(refused.exception)


@pytest.mark.parametrize(
    "option",
    [["--input", "nan", "--output", "1"], ["--input", "1", "--output", "1e999"], ["--gpu-hour", "1e8"]],
    ids=["nan", "inf", "over-the-column"],
)
def test_prices_set_refuses_prices_that_are_no_number_or_too_large(
    option: list[str], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NaN passed the non-negative check and was stored, costing every span of the model NaN; inf and
    1e8 reached PostgreSQL's NUMERIC(14, 6) and failed there with a traceback (DataError)."""
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    cli, runner = create_cli(), CliRunner()
    refused = runner.invoke(cli, ["prices", "set", "my-model", *option])
    assert isinstance(refused.exception, InvalidPrice), refused.exception  # one line and exit 2 in main()
    assert "under 100,000,000 USD" in str(refused.exception)
    listed = orjson.loads(runner.invoke(cli, ["prices", "list", "--json"]).output)
    assert "my-model" not in {row["model"] for row in listed}


@pytest.mark.parametrize("model", ["", "   "], ids=["empty", "blank"])
def test_prices_set_refuses_a_price_without_a_model_name(
    model: str, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty or blank name was stored: a price no model's name can ever match."""
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    cli, runner = create_cli(), CliRunner()
    refused = runner.invoke(cli, ["prices", "set", model, "--input", "1", "--output", "1"])
    assert isinstance(refused.exception, InvalidPrice), refused.exception  # one line and exit 2 in main()
    assert "needs a model name" in str(refused.exception)
    listed = orjson.loads(runner.invoke(cli, ["prices", "list", "--json"]).output)
    assert all(row["model"].strip() for row in listed), listed


def test_collector_uses_prices_set_after_start(database_url: str, make_collector) -> None:
    collector: Collector = make_collector(database_url, collector_price_refresh_s=0.1)
    engine = create_db_engine(database_url)
    with Session(engine) as session, session.begin():
        seed_default_prices(session)
        from collector.prices import set_price

        set_price(session, PriceEntry(Price("late-model", 1.0, 1.0)))
        assert "late-model" in {entry.price.model for entry in list_prices(session)}
    engine.dispose()
    deadline = datetime.now(UTC) + timedelta(seconds=30)
    while collector.receiver.prices.price_for("late-model", 0) is None:
        assert datetime.now(UTC) < deadline
        threading.Event().wait(0.05)


class _Metrics(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = EXPOSITION.encode()
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_scraper_stores_samples(database_url: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    engine = create_db_engine(database_url)
    scraper = Scraper(engine, [target, "http://127.0.0.1:9/metrics"], 60, 2, CollectorStats(), project="acme")
    try:
        assert scraper.scrape_once() == 5
    finally:
        scraper.stop()
        server.shutdown()
        server.server_close()
        engine.dispose()
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT name, labels, value, target FROM metric_samples ORDER BY name, value"
        ).fetchall()
        projects = connection.execute("SELECT DISTINCT project FROM metric_samples").fetchall()
    assert projects == [("acme",)]  # the project the scrape targets are bound to
    assert ("vllm:kv_cache_usage_perc", {"model_name": "smol"}, 0.25, target) in rows
    assert ("vllm:time_to_first_token_seconds_bucket", {"le": "+Inf"}, 5.0, target) in rows


def test_prune_drops_old_partitions_samples_and_rollups_only(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    today = datetime.now(UTC).date()
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_span_partitions(connection, [today - timedelta(days=40), today - timedelta(days=31), today])
    cutoff = datetime.combine(today - timedelta(days=30), datetime.min.time(), UTC)
    with psycopg.connect(database_url) as connection:  # the last minute before the cutoff and the first after
        for moment in (cutoff - timedelta(seconds=1), cutoff, cutoff + timedelta(minutes=5)):
            connection.execute(
                "INSERT INTO metric_samples (time, name, labels, value, target)"
                " VALUES (%s, 'up', '{}', 1, 't')",
                (moment,),
            )
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    result = CliRunner().invoke(create_cli(), ["collector", "prune", "--older-than", "30d"])
    assert result.exit_code == 0, result.output
    with engine.connect() as connection:
        remaining = list_span_partitions(connection)
    engine.dispose()
    assert remaining == [f"spans_p{today:%Y%m%d}"]
    assert "dropped 2" in result.output
    assert "deleted 1 metric samples" in result.output
    with psycopg.connect(database_url) as connection:
        samples = connection.execute("SELECT time FROM metric_samples ORDER BY time").fetchall()
        rollups = connection.execute(
            "SELECT width_s, bucket_start, num_samples FROM metric_rollups ORDER BY 1, 2"
        ).fetchall()
    assert samples == [(cutoff,), (cutoff + timedelta(minutes=5),)]
    assert rollups == [(60, cutoff, 1), (60, cutoff + timedelta(minutes=5), 1), (3600, cutoff, 2)]
    assert parse_age("2w") == timedelta(days=14)
    with pytest.raises(InvalidDuration):
        parse_age("30 minutes")


def insert_content(database_url: str, rows: list[tuple[str, str, datetime]], options: str = "") -> None:
    """GenAI content events as (project, trace id, time), each a question of its own."""
    with psycopg.connect(database_url, options=options) as connection:
        connection.cursor().executemany(
            "INSERT INTO genai_content (project, trace_id, span_id, time, event_name, direction, messages,"
            " digest) VALUES (%s, %s, %s, %s, 'gen_ai.user.message', 'input', '[]', %s)",
            [(project, trace, "1" * 16, moment, f"d{i}") for i, (project, trace, moment) in enumerate(rows)],
        )


def content_rows(database_url: str) -> list[tuple[str, datetime]]:
    with psycopg.connect(database_url) as connection:
        return connection.execute("SELECT project, time FROM genai_content ORDER BY project, time").fetchall()


def test_prune_deletes_genai_content_before_the_cutoff_only(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    today = datetime.now(UTC).date()
    cutoff = datetime.combine(today - timedelta(days=30), datetime.min.time(), UTC)
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_span_partitions(connection, [today])
    engine.dispose()
    moments = (cutoff - timedelta(days=10), cutoff - timedelta(seconds=1), cutoff, cutoff + timedelta(days=9))
    insert_content(database_url, [(p, p[0] * 32, m) for p in ("acme", "beta") for m in moments])
    now = datetime.now(UTC)
    with psycopg.connect(database_url) as connection:  # today's trace, its question kept
        connection.execute(
            "INSERT INTO spans (project, trace_id, span_id, start_time, end_time, duration_ms, name, kind,"
            " status_code, attributes, resource, events)"
            " VALUES ('acme', %s, %s, %s, %s, 1, 'chat', 1, 0, '{}', '{}', '[]')",
            ("a" * 32, "2" * 16, now, now),
        )
        connection.execute(
            "INSERT INTO metric_samples (time, name, labels, value, target) VALUES (%s, 'up', '{}', 1, 't')",
            (cutoff,),
        )
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    result = CliRunner().invoke(create_cli(), ["collector", "prune", "--older-than", "30d"])
    assert result.exit_code == 0, result.output
    assert f"deleted 4 GenAI content events before {cutoff.date()}" in result.output
    assert "deleted 0 metric samples" in result.output
    assert content_rows(database_url) == [(p, m) for p in ("acme", "beta") for m in moments[2:]]
    with psycopg.connect(database_url) as connection:
        assert connection.execute("SELECT count(*) FROM spans").fetchone() == (1,)
        assert connection.execute("SELECT count(*) FROM metric_samples").fetchone() == (1,)
        summaries = connection.execute("SELECT project, trace_id, asked FROM trace_summaries").fetchall()
    assert summaries == [("acme", "a" * 32, True)]


def test_content_deleted_a_batch_a_transaction_never_locking_the_table(database_url: str) -> None:
    """Rows of one time spanning batches all go; a batch waiting on a locked row has committed the
    batches before it, and holds no lock that keeps the log receiver from inserting."""
    cutoff = datetime(2026, 1, 1, tzinfo=UTC)
    old = cutoff - timedelta(days=3)
    insert_content(
        database_url,
        [("acme", "a" * 32, old)] * 5  # one time, over three batches of two
        + [("beta", "b" * 32, old + timedelta(hours=hour)) for hour in range(3)]
        + [("acme", "c" * 32, cutoff), ("beta", "d" * 32, cutoff + timedelta(days=1))],
    )
    engine = create_db_engine(database_url)
    deleted: list[int] = []
    with psycopg.connect(database_url) as holder, psycopg.connect(database_url, autocommit=True) as watcher:
        holder.execute("SELECT 1 FROM genai_content WHERE project = 'beta' AND time = %s FOR UPDATE", (old,))
        pruning = threading.Thread(target=lambda: deleted.append(delete_content_before(engine, cutoff, 2)))
        pruning.start()
        waiting = None
        for _ in range(600):  # until the batch that reached the locked row waits on it
            waiting = watcher.execute(
                "SELECT pid FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND query LIKE 'WITH doomed%%'"
            ).fetchone()
            if waiting is not None:
                break
            threading.Event().wait(0.05)
        assert waiting is not None
        assert watcher.execute("SELECT count(*) FROM genai_content WHERE project = 'acme'").fetchone() == (1,)
        table_locks = watcher.execute(
            "SELECT mode FROM pg_locks WHERE pid = %s AND locktype = 'relation'"
            " AND relation = 'genai_content'::regclass ORDER BY 1",
            waiting,
        ).fetchall()
        assert table_locks == [("AccessShareLock",), ("RowExclusiveLock",)]  # what any DELETE takes
        insert_content(database_url, [("beta", "e" * 32, old - timedelta(days=1))], "-c lock_timeout=10s")
        holder.commit()
        pruning.join()
    engine.dispose()
    assert deleted == [8]  # the row inserted meanwhile came after its project's batches had passed its time
    assert content_rows(database_url) == [
        ("acme", cutoff),
        ("beta", old - timedelta(days=1)),
        ("beta", cutoff + timedelta(days=1)),
    ]


def test_price_book_matches_names_as_clients_write_them() -> None:
    book = PriceBook(
        [
            PriceEntry(Price("gpt-4o", 2.5, 10.0)),
            PriceEntry(Price("gpt-4o-mini", 0.15, 0.6)),
            PriceEntry(Price("SmolLM2-135M-Instruct", gpu_hour_usd=0.5)),
            PriceEntry(Price("house-model", 1.0, 1.0), pattern="*house-v?-chat*"),
            PriceEntry(Price("broad", 9.0, 9.0), pattern="gpt-*"),
        ]
    )
    smol = Price("SmolLM2-135M-Instruct", gpu_hour_usd=0.5)
    assert book.price_for("smollm2-135m-instruct", 0) == smol  # any case
    assert book.price_for("HuggingFaceTB/SmolLM2-135M-Instruct", 0) == smol  # provider prefix
    assert book.price_for("openai/GPT-4o-2024-08-06", 0) == Price("gpt-4o", 2.5, 10.0)  # both, dated
    assert book.price_for("gpt-4o-mini-2024-07-18", 0) == Price("gpt-4o-mini", 0.15, 0.6)
    assert book.price_for("acme/House-V2-Chat-Large", 0) == Price("house-model", 1.0, 1.0)  # pattern
    # the broad pattern covers other gpt names but never beats a more specific row
    assert book.price_for("gpt-5", 0) == Price("broad", 9.0, 9.0)
    assert book.price_for("gpt-4o", 0) == Price("gpt-4o", 2.5, 10.0)
    # a prefix must end at a separator: gpt-4ox is not a dated gpt-4o
    assert PriceBook([PriceEntry(Price("gpt-4o", 2.5, 10.0))]).price_for("gpt-4ox", 0) is None
    # a client's span of the self-hosted model: GPU-hours over its duration (2 s)
    span = record("smollm2-135m-instruct", input_tokens=12, output_tokens=3)
    book.tag_costs([span])
    assert span.cost_usd == pytest.approx(0.5 * 2.0 / 3600)


def test_prices_cli_pattern(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    cli, runner = create_cli(), CliRunner()
    args = ["prices", "set", "house-model", "--input", "1", "--output", "2", "--pattern", "*house-v?*"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    engine = create_db_engine(database_url)
    with Session(engine) as session:
        book = PriceBook(list_prices(session))
    engine.dispose()
    assert book.price_for("acme/HOUSE-V3", 0) == Price("house-model", 1.0, 2.0)
    listed = orjson.loads(runner.invoke(cli, ["prices", "list", "--json"]).output)
    assert [row["pattern"] for row in listed if row["model"] == "house-model"] == ["*house-v?*"]
    refused = runner.invoke(cli, ["prices", "set", "all", "--input", "1", "--output", "1", "--pattern", "**"])
    # the CLI's entry point turns this error into one line and exit code 2
    assert refused.exit_code != 0 and "only wildcards" in str(refused.exception)
