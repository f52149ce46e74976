"""Issue 14's fault-injection run: the real OpenTelemetry SDK sends two projects' spans while poison
spans arrive, PostgreSQL restarts and the collector is SIGKILLed and restarted, all in one run.

Acknowledged means the SDK's exporter got a success for the batch. Afterwards, per project: every
acknowledged good span is stored exactly once, every acknowledged poison span is in the quarantine
with PostgreSQL's reason and never in ``spans``. (A batch whose answer was lost to the SIGKILL may be
stored too: at least once, never lost.)
"""

import secrets
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from evallens.ports import free_port
from evallens.telemetry import attributes as names
from tests.collector.conftest import OwnPostgres, start_collector_process

PROJECTS = ("alpha", "beta")
POISON_EVERY = 40


class Acknowledged(SpanExporter):
    """The real OTLP/HTTP exporter, remembering the span ids of every batch it got a success for."""

    def __init__(self, endpoint: str) -> None:
        self._exporter = OTLPSpanExporter(endpoint=endpoint, timeout=60)
        self._lock = threading.Lock()
        self.span_ids: set[str] = set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self._exporter.export(spans)
        if result is SpanExportResult.SUCCESS:
            with self._lock:
                self.span_ids.update(f"{span.context.span_id:016x}" for span in spans)
        return result

    def shutdown(self) -> None:
        self._exporter.shutdown()  # type: ignore[no-untyped-call]


class Traffic:
    """One project's service: a tracer provider with a batch processor, and a thread making spans."""

    def __init__(self, project: str, endpoint: str, poison: bool) -> None:
        self.exporter = Acknowledged(endpoint)
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": f"svc-{project}", names.PROJECT: project})
        )
        self.provider.add_span_processor(
            BatchSpanProcessor(
                self.exporter, max_queue_size=100_000, schedule_delay_millis=100, max_export_batch_size=200
            )
        )
        self.poison, self.poison_ids = poison, set[str]()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        tracer = self.provider.get_tracer("tests.fault_injection")
        number = 0
        while not self.stop.is_set():
            with tracer.start_as_current_span("request") as request:
                with tracer.start_as_current_span("generate") as span:
                    span.set_attribute(names.GEN_AI_USAGE_INPUT_TOKENS, number)
                    if self.poison and number % POISON_EVERY == 0:
                        # passes every check of the collector; PostgreSQL refuses the row (54000)
                        span.set_attribute("blob", secrets.token_hex(4000))
                        self.poison_ids.add(f"{span.get_span_context().span_id:016x}")
                request.set_attribute("n", number)
            number += 1
            time.sleep(0.002)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert self.provider.force_flush(120_000)
        self.provider.shutdown()


def stored(url: str) -> dict[str, list[str]]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT project, span_id FROM spans").fetchall()
    by_project: dict[str, list[str]] = {project: [] for project in PROJECTS}
    for project, span_id in rows:
        by_project[project].append(span_id)
    return by_project


def quarantined(url: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT span_id, project, reason FROM collector_quarantine").fetchall()
    return {span_id: (project, reason) for span_id, project, reason in rows}


def wait_for(condition: Callable[[], bool], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def healthz(port: int) -> dict[str, Any]:
    try:
        return dict(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json())
    except httpx.HTTPError:
        return {}


@pytest.mark.integration
def test_poison_postgres_restart_and_sigkill_under_sdk_load(
    own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    with psycopg.connect(own_postgres.url, autocommit=True) as connection:
        connection.execute("CREATE INDEX spans_blob ON spans ((attributes ->> 'blob'))")
    port, data_dir = free_port(), tmp_path / "data"
    collector = start_collector_process(own_postgres.url, data_dir, port)
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    traffic = {project: Traffic(project, endpoint, poison=project == "alpha") for project in PROJECTS}
    for each in traffic.values():
        each.thread.start()
    try:

        def acked() -> int:
            return sum(len(each.exporter.span_ids) for each in traffic.values())

        wait_for(lambda: acked() >= 1_000)
        own_postgres.stop()  # PostgreSQL goes away: acknowledged spans go to the spool
        wait_for(lambda: healthz(port).get("spooled_bytes", 0) > 0 and acked() >= 2_000)
        own_postgres.start()
        wait_for(lambda: acked() >= 3_000)
        collector.send_signal(signal.SIGKILL)  # mid-load, spool possibly not yet replayed
        collector.wait(30)
        collector = start_collector_process(own_postgres.url, data_dir, port)
        wait_for(lambda: acked() >= 4_500)
        for each in traffic.values():
            each.finish()
        wait_for(lambda: healthz(port).get("spooled_bytes") == 0 and healthz(port).get("queued_spans") == 0)
    finally:
        collector.send_signal(signal.SIGTERM)
        assert collector.wait(60) == 0

    rows, kept = stored(own_postgres.url), quarantined(own_postgres.url)
    for project, each in traffic.items():
        poison = each.poison_ids & each.exporter.span_ids
        good = each.exporter.span_ids - each.poison_ids
        assert len(rows[project]) == len(set(rows[project])), f"{project}: a span was stored twice"
        assert good - set(rows[project]) == set(), f"{project}: an acknowledged span is missing"
        assert poison.isdisjoint(rows[project])
        assert poison <= {span_id for span_id, (owner, _) in kept.items() if owner == project}
        assert all("SQLSTATE 54000" in kept[span_id][1] for span_id in poison)
    assert traffic["alpha"].poison_ids & traffic["alpha"].exporter.span_ids, "no poison span was acknowledged"
