"""Fixtures for the collector: a collector in this process or as a subprocess, OTLP payload builders."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from collector.runtime import Collector
from evallens.db.migrate import upgrade
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.settings import CollectorSettings, child_environment
from tests.conftest import REPO_ROOT


def collector_settings(database_url: str, data_dir: Path, **overrides: Any) -> CollectorSettings:
    """Settings for a test collector: free ports, a private data dir and spool, no scraping."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "data_dir": data_dir,
        "collector_http_port": 0,
        "collector_grpc_port": 0,
        "collector_db_retry_s": 0.2,
    }
    values.update(overrides)
    return CollectorSettings(**values)


@pytest.fixture
def make_collector(tmp_path: Path) -> Iterator[Callable[..., Collector]]:
    """Start collectors in this process (free ports, private spool) with settings overrides."""
    started: list[Collector] = []

    def start(database_url: str, **overrides: Any) -> Collector:
        data_dir = tmp_path / f"collector-{len(started)}"
        collector = Collector(collector_settings(database_url, data_dir, **overrides), database_url)
        collector.start_in_background()
        started.append(collector)
        return collector

    yield start
    for collector in started:
        collector.stop()


@pytest.fixture
def running_collector(database_url: str, make_collector: Callable[..., Collector]) -> Collector:
    """A collector serving HTTP and gRPC from this process, on free ports."""
    return make_collector(database_url)


def kill_decode_worker(collector: Collector) -> None:
    """SIGKILL the collector's one decode worker, as the OOM killer would; return once it is gone."""
    (pid,) = collector.pool.worker_pids
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _running(pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie does not); the pool may reap it between any two looks."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def otlp_value(value: Any) -> AnyValue:
    """An OTLP ``AnyValue`` for a Python value."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def otlp_attributes(attributes: dict[str, Any]) -> list[KeyValue]:
    """OTLP key-values for a dict."""
    return [KeyValue(key=key, value=otlp_value(value)) for key, value in attributes.items()]


def make_span(
    index: int,
    *,
    trace_id: bytes | None = None,
    start_ns: int | None = None,
    duration_ns: int = 5_000_000,
    attributes: dict[str, Any] | None = None,
    parent: bytes = b"",
) -> Span:
    """A valid span whose ids derive from ``index`` (so a resend has the same identity)."""
    start = start_ns if start_ns is not None else time.time_ns() - 1_000_000_000
    return Span(
        trace_id=trace_id or (index + 1).to_bytes(16, "big"),
        span_id=(index + 1).to_bytes(8, "big"),
        parent_span_id=parent,
        name=f"span-{index}",
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=start + duration_ns,
        attributes=otlp_attributes(attributes or {}),
    )


def make_request(spans: list[Span], resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    """An export request with one resource and one scope holding ``spans``."""
    request = ExportTraceServiceRequest()
    resource_spans = ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])
    resource_spans.resource.attributes.extend(otlp_attributes(resource or {"service.name": "test-service"}))
    resource_spans.scope_spans[0].scope.name = "tests"
    request.resource_spans.append(resource_spans)
    return request


def fetch_spans(database_url: str, where: str = "TRUE") -> list[dict[str, Any]]:
    """Stored spans as dicts, by trace and span id."""
    with psycopg.connect(database_url) as connection, connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM spans WHERE {where} ORDER BY trace_id, span_id")
        columns = [column.name for column in cursor.description or []]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def count_spans(database_url: str) -> int:
    """How many spans are stored."""
    with psycopg.connect(database_url) as connection:
        row = connection.execute("SELECT count(*) FROM spans").fetchone()
        return int(row[0]) if row else 0


def start_collector_process(
    database_url: str, data_dir: Path, http_port: int, **env: str
) -> subprocess.Popen[bytes]:
    """``evallens collector`` as a child process configured only through EVALLENS_* variables."""
    environment = child_environment(
        {
            "EVALLENS_DATABASE_URL": database_url,
            "EVALLENS_DATA_DIR": str(data_dir),
            "EVALLENS_COLLECTOR_HTTP_PORT": str(http_port),
            "EVALLENS_COLLECTOR_GRPC_ENABLED": "false",
            "EVALLENS_COLLECTOR_DB_RETRY_S": "0.2",
            **env,
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "evallens", "collector"],
        cwd=REPO_ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
    )
    wait_until_healthy(f"http://127.0.0.1:{http_port}", process)
    return process


def wait_until_healthy(base_url: str, process: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    """Poll ``/healthz`` until the collector answers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"collector exited with {process.returncode}")
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError("collector did not become healthy")


@dataclass
class OwnPostgres:
    """A PostgreSQL of the test's own, which the test may stop and start again (same URL)."""

    pgdata: Path
    url: str = ""
    server: object = None

    def start(self) -> None:
        self.server = start_embedded(self.pgdata)
        url = embedded_url(self.server, "outage")
        assert not self.url or url == self.url
        self.url = url

    def stop(self) -> None:
        self.server.cleanup()  # type: ignore[attr-defined]  # fast shutdown: connections are cut


@pytest.fixture
def own_postgres(tmp_path: Path) -> Iterator[OwnPostgres]:
    postgres = OwnPostgres(tmp_path / "pg" / "data")
    postgres.server = start_embedded(postgres.pgdata)
    ensure_database(embedded_url(postgres.server, "postgres"), "outage")
    postgres.start()
    upgrade(postgres.url)
    yield postgres
    postgres.stop()
