"""Collector memory benchmark: peak RSS while four clients each send one 300,000-span request at once.

The case of issue 14 (finding 5): tiny spans make a ~14 MB request decode into hundreds of MB of
Python objects. Runs the collector as a subprocess (its decode workers included in the RSS), once
with the four requests over OTLP/HTTP and once over OTLP/gRPC; clients resend after 429/503 as
OpenTelemetry exporters do, until every span is stored. Prints figures; asserts nothing.

    python bench/collector_memory.py [--spans 300000] [--clients 4]

To measure another tree (e.g. before a change), run this file with ``PYTHONPATH`` pointing at that
tree's ``platform`` and root: the collector and the migrations come from ``PYTHONPATH``.
"""

import argparse
import contextlib
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import psutil
import psycopg
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from evallens.app.demo.processes import ManagedProcess, healthy
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.ports import free_port
from evallens.settings import child_environment

RETRYABLE_HTTP = (429, 503)
COLLECTOR_START_S = 120.0  # a cold start on a busy 2-core machine takes seconds; a dead one fails at once
RETRYABLE_GRPC = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)


def tiny_request(client: int, num_spans: int) -> bytes:
    """One export request of ``num_spans`` minimal spans (ids, a name, times), ids unique per client."""
    start = time.time_ns() - 10**9
    spans = [
        Span(
            trace_id=(client * 10**7 + i // 10 + 1).to_bytes(16, "big"),
            span_id=(client * 10**7 + i + 1).to_bytes(8, "big"),
            name="s",
            start_time_unix_nano=start,
            end_time_unix_nano=start + 1000,
        )
        for i in range(num_spans)
    ]
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return request.SerializeToString()


@contextlib.contextmanager
def migrated_database() -> Iterator[tuple[str, Path]]:
    """A scratch directory and a migrated database ``bench`` on an embedded PostgreSQL in it (its URL),
    removed on the way out."""
    with tempfile.TemporaryDirectory(prefix="evallens-bench-") as scratch:
        server = start_embedded(Path(scratch) / "pg")
        try:
            ensure_database(embedded_url(server, "postgres"), "bench")
            url = embedded_url(server, "bench")
            subprocess.run(
                [sys.executable, "-m", "evallens", "db", "upgrade"],
                cwd=scratch,
                env=child_environment({"EVALLENS_DATABASE_URL": url, "EVALLENS_DATA_DIR": scratch}),
                check=True,
                capture_output=True,
            )
            yield url, Path(scratch)
        finally:
            server.cleanup()


def collector_process(environment: dict[str, str], port: int) -> ManagedProcess:
    """``evallens collector`` with ``environment``, logging to a file that outlives the scratch dir."""
    log_path = Path(tempfile.gettempdir()) / f"evallens-bench-collector-{port}.log"
    return ManagedProcess("collector", [sys.executable, "-m", "evallens", "collector"], log_path, environment)


def tree_rss(process: psutil.Process) -> tuple[int, int]:
    """RSS of a process, and of all its children (the collector's decode workers)."""
    own = children = 0
    with contextlib.suppress(psutil.Error):
        own = process.memory_info().rss
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            children += child.memory_info().rss
    return own, children


@dataclass
class Watch:
    """Samples tree RSS and /healthz answer time every 20 ms while a scenario runs."""

    pid: int
    health_url: str
    peak_rss: int = 0
    peak_main_rss: int = 0
    peak_workers_rss: int = 0
    slowest_health_s: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        process = psutil.Process(self.pid)
        with httpx.Client(timeout=120) as client:
            while not self.stop.is_set():
                own, children = tree_rss(process)
                self.peak_rss = max(self.peak_rss, own + children)
                self.peak_main_rss = max(self.peak_main_rss, own)
                self.peak_workers_rss = max(self.peak_workers_rss, children)
                started = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    client.get(self.health_url)
                self.slowest_health_s = max(self.slowest_health_s, time.perf_counter() - started)
                self.stop.wait(0.02)


def send_http(port: int, body: bytes, statuses: list[str]) -> None:
    with httpx.Client(timeout=600) as client:
        while True:
            response = client.post(
                f"http://127.0.0.1:{port}/v1/traces",
                content=body,
                headers={"content-type": "application/x-protobuf"},
            )
            statuses.append(str(response.status_code))
            if response.status_code not in RETRYABLE_HTTP:
                return
            time.sleep(float(response.headers.get("retry-after", "1")))


def send_grpc(port: int, body: bytes, statuses: list[str]) -> None:
    request = ExportTraceServiceRequest.FromString(body)
    options = [("grpc.max_send_message_length", 64 * 2**20)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        while True:
            try:
                stub.Export(request, timeout=600)
                statuses.append("OK")
                return
            except grpc.RpcError as error:
                statuses.append(error.code().name)
                if error.code() not in RETRYABLE_GRPC:
                    return
                time.sleep(2)


def count_spans(url: str) -> int:
    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT count(*) FROM spans").fetchone()
        return int(row[0]) if row else 0


def scenario(name: str, url: str, scratch: Path, bodies: list[bytes], send: Callable[..., None]) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("TRUNCATE spans")
    http_port, grpc_port = free_port(), free_port()
    environment = {
        "EVALLENS_DATABASE_URL": url,
        "EVALLENS_DATA_DIR": str(scratch / name),
        "EVALLENS_COLLECTOR_HTTP_PORT": str(http_port),
        "EVALLENS_COLLECTOR_GRPC_PORT": str(grpc_port),
        "EVALLENS_COLLECTOR_MAX_REQUEST_BYTES": str(32 * 2**20),
    }
    health_url = f"http://127.0.0.1:{http_port}/healthz"
    with healthy(collector_process(environment, http_port), health_url, COLLECTOR_START_S, 120) as collector:
        time.sleep(1)
        idle_rss = sum(tree_rss(psutil.Process(collector.pid)))
        watch = Watch(collector.pid, health_url)
        threading.Thread(target=watch.run, daemon=True).start()
        statuses: list[str] = []
        port = http_port if send is send_http else grpc_port
        started = time.perf_counter()
        senders = [threading.Thread(target=send, args=(port, body, statuses)) for body in bodies]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        answered_s = time.perf_counter() - started
        stored = count_spans(url)
        watch.stop.set()
    answers = ", ".join(f"{statuses.count(s)} x {s}" for s in sorted(set(statuses)))
    print(f"{name}:")
    print(f"  idle RSS (collector + workers):  {idle_rss / 2**20:,.0f} MiB")
    print(f"  peak RSS (collector + workers):  {watch.peak_rss / 2**20:,.0f} MiB")
    print(f"  peak RSS of the main process:    {watch.peak_main_rss / 2**20:,.0f} MiB")
    print(f"  peak RSS of the decode workers:  {watch.peak_workers_rss / 2**20:,.0f} MiB")
    print(f"  slowest /healthz during the run: {watch.slowest_health_s:.2f} s")
    print(f"  answers: {answers}; {stored:,} spans stored; {answered_s:.1f} s until the last answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--spans", type=int, default=300_000, help="spans in each request (default: %(default)s)"
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="requests sent at once, one per client (default: %(default)s)"
    )
    args = parser.parse_args()
    bodies = [tiny_request(client, args.spans) for client in range(args.clients)]
    print(
        f"{args.clients} requests of {args.spans:,} spans, {len(bodies[0]) / 2**20:.1f} MiB each", flush=True
    )
    with migrated_database() as (url, scratch):
        scenario("OTLP/HTTP", url, scratch, bodies, send_http)
        scenario("OTLP/gRPC", url, scratch, bodies, send_grpc)


if __name__ == "__main__":
    main()
