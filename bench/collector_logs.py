"""Collector logs benchmark: how a large ``/v1/logs`` request weighs on an honest traces client.

One client sends a ~15 MiB OTLP logs request of GenAI content events; once its upload is done and
the collector is decoding it, a second client sends honest 500-span traces requests, one after
another, until the logs request is answered. Prints how long those waited for their answers
(median, slowest), how long the logs request took, and the peak RSS of
the collector's main process and of its decode workers; then, in the same run, the raw COPY ceiling:
the same rows (decoded by the collector's own code) COPYed straight into the emptied table. Runs
the collector as a subprocess; asserts nothing.

    python -m bench.collector_logs [--records 60000] [--content-chars 200]   (from the repository root)

To measure another tree (e.g. before a change), run this file with ``PYTHONPATH`` pointing at that
tree's ``platform`` and root: the collector and the migrations come from ``PYTHONPATH``.
"""

import argparse
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil
import psycopg
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from bench.collector_memory import COLLECTOR_START_S, collector_process, migrated_database, tree_rss
from collector.logs import CONTENT_COLUMNS, LogsJob, decode_logs_body
from collector.validate import SpanLimits
from evallens.app.demo.processes import healthy
from evallens.ports import free_port

PROTOBUF = {"content-type": "application/x-protobuf"}


def logs_body(num_records: int, content_chars: int) -> bytes:
    """One logs request of ``gen_ai.user.message`` events, each on its own span."""
    now = time.time_ns()
    records = []
    for index in range(num_records):
        content = (f"question {index} " * (content_chars // 10 + 1))[:content_chars]
        body = AnyValue(kvlist_value=KeyValueList(values=[]))
        entry = body.kvlist_value.values.add()
        entry.key, entry.value.string_value = "content", content
        records.append(
            LogRecord(
                time_unix_nano=now,
                trace_id=(index // 4 + 1).to_bytes(16, "big"),
                span_id=(index + 1).to_bytes(8, "big"),
                event_name="gen_ai.user.message",
                body=body,
            )
        )
    request = ExportLogsServiceRequest(
        resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])]
    )
    return request.SerializeToString()


def traces_body(batch: int, num_spans: int = 500) -> bytes:
    """An honest traces request: ``num_spans`` small spans, ids unique per ``batch``."""
    start = time.time_ns() - 10**9
    first = 10**7 + batch * num_spans
    spans = [
        Span(
            trace_id=(first + i // 10).to_bytes(16, "big"),
            span_id=(first + i).to_bytes(8, "big"),
            name="chat",
            start_time_unix_nano=start,
            end_time_unix_nano=start + 10**6,
        )
        for i in range(num_spans)
    ]
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return request.SerializeToString()


class PeakRss:
    """Samples the collector's own RSS and its workers' every 20 ms."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.main = self.workers = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            own, children = tree_rss(self.process)
            self.main, self.workers = max(self.main, own), max(self.workers, children)
            self.stop.wait(0.02)


def measure(url: str, scratch: Path, logs: bytes, traces: Callable[[int], bytes]) -> None:
    http_port = free_port()
    environment = {
        "EVALLENS_DATABASE_URL": url,
        "EVALLENS_DATA_DIR": str(scratch / "collector"),
        "EVALLENS_COLLECTOR_HTTP_PORT": str(http_port),
        "EVALLENS_COLLECTOR_GRPC_ENABLED": "false",
    }
    base = f"http://127.0.0.1:{http_port}"
    process = collector_process(environment, http_port)
    with healthy(process, f"{base}/healthz", COLLECTOR_START_S, 60) as collector:
        time.sleep(1)
        idle_main, idle_workers = tree_rss(psutil.Process(collector.pid))
        peak = PeakRss(collector.pid)
        threading.Thread(target=peak.run, daemon=True).start()
        uploaded = threading.Event()
        logs_answer: list[tuple[int, float]] = []

        def upload() -> Iterator[bytes]:
            yield logs[: len(logs) // 2]
            yield logs[len(logs) // 2 :]
            uploaded.set()

        def send_logs() -> None:
            started = time.perf_counter()
            response = httpx.post(f"{base}/v1/logs", content=upload(), headers=PROTOBUF, timeout=600)
            logs_answer.append((response.status_code, time.perf_counter() - started))

        sender = threading.Thread(target=send_logs)
        sender.start()
        uploaded.wait(600)
        time.sleep(0.5)  # the collector has the whole body and is decoding it
        waits_s: list[float] = []
        statuses: set[int] = set()
        with httpx.Client(timeout=600) as client:
            for batch in range(10_000):
                if logs_answer:
                    break
                started = time.perf_counter()
                response = client.post(f"{base}/v1/traces", content=traces(batch), headers=PROTOBUF)
                waits_s.append(time.perf_counter() - started)
                statuses.add(response.status_code)
        sender.join()
        peak.stop.set()
    logs_status, logs_s = logs_answer[0]
    print(f"  idle RSS: main {idle_main / 2**20:,.0f} MiB, workers {idle_workers / 2**20:,.0f} MiB")
    print(f"  logs request: {logs_status} after {logs_s:.1f} s")
    waits_s.sort()
    if waits_s:
        median_s, slowest_s = waits_s[len(waits_s) // 2], waits_s[-1]
        print(
            f"  500-span traces requests sent one after another meanwhile: {len(waits_s)}"
            f" (answers {statuses}); median {median_s:.2f} s, slowest {slowest_s:.2f} s to be acknowledged"
        )
    else:
        print("  no traces request was sent while the logs request ran: give it more --records")
    print(
        f"  peak RSS: main process {peak.main / 2**20:,.0f} MiB, "
        f"decode workers {peak.workers / 2**20:,.0f} MiB"
    )
    raw_s, num_rows = raw_copy(url, logs)
    print(
        f"  raw COPY ceiling, the same {num_rows:,} rows into the same emptied table and indexes:"
        f" {raw_s:.1f} s ({num_rows / raw_s:,.0f} rows/s); the collector's whole request took"
        f" {logs_s / raw_s:.1f}x that (upload, decode, staging COPY, move)"
    )


def raw_copy(url: str, logs: bytes) -> tuple[float, int]:
    """Seconds for one plain COPY of the request's rows (decoded here, untimed) into the emptied
    ``genai_content``, and how many rows."""
    batch = decode_logs_body(LogsJob(logs, "protobuf", False, len(logs), SpanLimits(), None))
    columns = ", ".join(CONTENT_COLUMNS)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("TRUNCATE genai_content")
        started = time.perf_counter()
        with connection.cursor() as cursor, cursor.copy(f"COPY genai_content ({columns}) FROM STDIN") as copy:
            copy.write("".join(batch.lines))
        return time.perf_counter() - started, len(batch.lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60_000, help="log records (default: %(default)s)")
    parser.add_argument(
        "--content-chars",
        type=int,
        default=200,
        help="characters of each event's content (default: %(default)s)",
    )
    args = parser.parse_args()
    logs = logs_body(args.records, args.content_chars)
    print(f"logs request: {args.records:,} content events, {len(logs) / 2**20:.1f} MiB", flush=True)
    with migrated_database() as (url, scratch):
        measure(url, scratch, logs, traces_body)


if __name__ == "__main__":
    main()
