"""A 200 is a promise: after SIGKILL, or PostgreSQL stopped mid-load, acknowledged spans are stored once."""

import itertools
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from collector.runtime import Collector
from evallens.db.migrate import upgrade
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.ports import free_port
from tests.collector.conftest import OwnPostgres, make_request, make_span, start_collector_process

SPANS_PER_BATCH = 50
PROTOBUF = {"content-type": "application/x-protobuf"}


@dataclass
class Load:
    """Clients that send numbered batches and remember which ones were acknowledged."""

    url: str
    retry_refused: bool = True
    acknowledged: set[int] = field(default_factory=set)
    statuses: list[int] = field(default_factory=list)
    retry_after: set[str] = field(default_factory=set)
    stop: threading.Event = field(default_factory=threading.Event)
    _numbers: "itertools.count[int]" = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, num_clients: int) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._client, daemon=True) for _ in range(num_clients)]
        for thread in threads:
            thread.start()
        return threads

    def _client(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                with self._lock:
                    number = next(self._numbers)
                body = batch_body(number)
                while not self.stop.is_set():
                    try:
                        response = client.post(self.url, content=body, headers=PROTOBUF)
                    except httpx.HTTPError:
                        break  # the collector died: this batch was never acknowledged
                    with self._lock:
                        self.statuses.append(response.status_code)
                        if response.status_code == 200:
                            self.acknowledged.add(number)
                        elif "retry-after" in response.headers:
                            self.retry_after.add(response.headers["retry-after"])
                    if response.status_code == 200 or not self.retry_refused:
                        break
                    time.sleep(0.05)


def batch_body(number: int) -> bytes:
    start = time.time_ns() - 10**9
    spans = [make_span(number * SPANS_PER_BATCH + i, start_ns=start) for i in range(SPANS_PER_BATCH)]
    return make_request(spans).SerializeToString()


def stored_span_ids(database_url: str) -> list[int]:
    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT span_id FROM spans").fetchall()
    return [int(row[0], 16) - 1 for row in rows]


def assert_acknowledged_stored_once(database_url: str, acknowledged: set[int]) -> None:
    stored = stored_span_ids(database_url)
    assert len(stored) == len(set(stored)), "a span was stored twice"
    expected = {number * SPANS_PER_BATCH + i for number in acknowledged for i in range(SPANS_PER_BATCH)}
    assert expected - set(stored) == set(), "an acknowledged span is missing"


def wait_for(condition: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.integration
def test_sigkill_mid_load_then_restart_keeps_every_acknowledged_span(
    database_url: str, tmp_path: Path
) -> None:
    port = free_port()
    process = start_collector_process(database_url, tmp_path, port)
    load = Load(f"http://127.0.0.1:{port}/v1/traces")
    threads = load.run(num_clients=4)
    wait_for(lambda: len(load.acknowledged) >= 20)
    workers = psutil.Process(process.pid).children(recursive=True)
    assert workers, "the collector has no decode workers"
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    # its decode workers go with it (they would otherwise live on, holding memory)
    wait_for(
        lambda: not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    )
    load.stop.set()
    for thread in threads:
        thread.join(60)
    restarted = start_collector_process(database_url, tmp_path, port)
    try:
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/healthz").json()["spooled_bytes"] == 0)
        assert_acknowledged_stored_once(database_url, load.acknowledged)
    finally:
        restarted.send_signal(signal.SIGTERM)
        assert restarted.wait(60) == 0


@pytest.mark.integration
@pytest.mark.parametrize("spool", [True, False], ids=["spool", "no-spool"])
def test_postgres_stopped_under_load_loses_nothing(
    tmp_path: Path, make_collector: Callable[..., Collector], spool: bool
) -> None:
    pgdata = tmp_path / "pg" / "data"
    server = start_embedded(pgdata)
    ensure_database(embedded_url(server, "postgres"), "outage")
    url = embedded_url(server, "outage")
    upgrade(url)
    collector = make_collector(url, collector_spool_enabled=spool, collector_retry_after_s=1)
    load = Load(f"http://127.0.0.1:{collector.http_port}/v1/traces")
    threads = load.run(num_clients=3)
    try:
        wait_for(lambda: len(load.acknowledged) >= 10)
        server.cleanup()  # PostgreSQL stops (fast shutdown) while requests are in flight
        wait_for(lambda: not collector.ingestor.database_up)
        outage_statuses = len(load.statuses)
        wait_for(lambda: len(load.statuses) >= outage_statuses + 20)
        server = start_embedded(pgdata)
        assert embedded_url(server, "outage") == url
        wait_for(lambda: len(load.acknowledged) >= 40)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(60)
    wait_for(lambda: collector.health()["spooled_bytes"] == 0 and collector.ingestor.num_queued_spans == 0)
    if spool:
        assert collector.stats.spans_spooled._value.get() > 0
    else:
        assert 503 in load.statuses and load.retry_after == {"1"}
    assert_acknowledged_stored_once(url, load.acknowledged)
    collector.stop()
    server.cleanup()


def spooled_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "collector" / "spool").glob("*.spool"))


@pytest.mark.integration
def test_spool_written_while_postgres_is_down_is_replayed_after_a_crash(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    """PostgreSQL down -> spool -> SIGKILL the collector -> PostgreSQL up -> restart: stored once."""
    port, data_dir = free_port(), tmp_path / "data"
    process = start_collector_process(own_postgres.url, data_dir, port)
    load = Load(f"http://127.0.0.1:{port}/v1/traces")
    threads = load.run(num_clients=3)
    try:
        wait_for(lambda: len(load.acknowledged) >= 5)
        own_postgres.stop()
        before = len(load.acknowledged)
        wait_for(lambda: len(spooled_files(data_dir)) >= 3 and len(load.acknowledged) >= before + 10)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(60)
    assert spooled_files(data_dir), "nothing was spooled: the test proves nothing"
    own_postgres.start()
    restarted = start_collector_process(own_postgres.url, data_dir, port)
    try:
        wait_for(lambda: httpx.get(f"http://127.0.0.1:{port}/healthz").json()["spooled_bytes"] == 0)
        assert spooled_files(data_dir) == []
        assert_acknowledged_stored_once(own_postgres.url, load.acknowledged)
    finally:
        restarted.send_signal(signal.SIGTERM)
        assert restarted.wait(60) == 0


@pytest.mark.integration
def test_a_full_spool_refuses_new_spans_instead_of_dropping_them(
    own_postgres: OwnPostgres, make_collector: Callable[..., Collector]
) -> None:
    collector = make_collector(own_postgres.url, collector_spool_max_bytes=60_000, collector_retry_after_s=1)
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    own_postgres.stop()
    statuses: list[int] = []
    acknowledged: set[int] = set()
    with httpx.Client(timeout=30) as client:
        for number in range(100):
            response = client.post(url, content=batch_body(number), headers=PROTOBUF)
            statuses.append(response.status_code)
            if response.status_code == 200:
                acknowledged.add(number)
            elif response.status_code == 503:
                assert response.headers["retry-after"] == "1"
                if statuses.count(503) >= 3:
                    break
    assert acknowledged and 503 in statuses, statuses
    health = httpx.get(url.replace("/v1/traces", "/healthz"))
    assert health.status_code == 503 and health.json()["spool_full"] is True
    own_postgres.start()
    wait_for(lambda: collector.health()["spooled_bytes"] == 0 and collector.health()["ok"])
    assert_acknowledged_stored_once(own_postgres.url, acknowledged)
    assert (
        len(stored_span_ids(own_postgres.url)) == len(acknowledged) * SPANS_PER_BATCH
    )  # refused: not stored
