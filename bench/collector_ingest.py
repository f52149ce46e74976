"""Collector ingest benchmark: durable spans/s through OTLP/HTTP against the raw COPY ceiling.

Builds realistic GenAI traces (request -> retrieval, embedding, rerank, generation), sends them in
500-span batches from several concurrent clients to a collector subprocess, waits until every span
is counted in PostgreSQL. Then, in the same run, the raw COPY ceiling: the same payloads turned into
rows by the collector's own worker code (``decode_body``, same limits and prices), COPYed into the
same emptied, partitioned ``spans`` table with the same indexes, once from this process's bytes and
once read by PostgreSQL from a file; the ratios of the collector to both are printed.

    python bench/collector_ingest.py [--spans 100000] [--clients 4] [--batch 500]
"""

import argparse
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil
import psycopg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from sqlalchemy.orm import Session

from collector.prices import PriceBook, list_prices
from collector.runtime import span_limits
from collector.workers import DecodeJob, decode_body
from collector.write import COPY_SPANS
from evallens.app.demo.processes import ManagedProcess, healthy
from evallens.db.engine import create_db_engine
from evallens.db.migrate import upgrade
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.ports import free_port
from evallens.settings import CollectorSettings
from evallens.telemetry import attributes as names

REPO_ROOT = Path(__file__).resolve().parents[1]
COLLECTOR_START_S = 120.0  # a cold start on a busy 2-core machine takes seconds; a dead one fails at once
WORDS = [
    "the",
    "model",
    "retrieved",
    "three",
    "passages",
    "about",
    "kv",
    "cache",
    "eviction",
    "and",
    "prefix",
    "caching",
    "before",
    "answering",
]


def text(rng: random.Random, length: int = 300) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < length:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:length]


def attrs(values: dict[str, object]) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        if isinstance(value, bool):
            any_value = AnyValue(bool_value=value)
        elif isinstance(value, int):
            any_value = AnyValue(int_value=value)
        elif isinstance(value, float):
            any_value = AnyValue(double_value=value)
        else:
            any_value = AnyValue(string_value=str(value))
        out.append(KeyValue(key=key, value=any_value))
    return out


def trace_spans(rng: random.Random, number: int, now_ns: int) -> list[Span]:
    """A request span with retrieval, embedding, rerank and generation children."""
    trace_id = rng.randbytes(16)
    root_id = rng.randbytes(8)
    start = now_ns - rng.randrange(10**9, 60 * 10**9)
    common = {
        names.TENANT: f"tenant-{number % 7}",
        names.FEATURE: "support-chat",
        names.USER: f"user-{number % 101}",
    }
    question, answer = text(rng), text(rng)
    children: dict[str, dict[str, object]] = {
        "retrieve": {
            "openinference.span.kind": "RETRIEVER",
            "input.value": question,
            **{names.retrieval_document_id(i): f"doc-{rng.randrange(10_000)}" for i in range(3)},
            **{names.retrieval_document_score(i): rng.random() for i in range(3)},
        },
        "embed": {names.GEN_AI_OPERATION_NAME: "embeddings", names.GEN_AI_REQUEST_MODEL: "all-MiniLM-L6-v2"},
        "rerank": {"openinference.span.kind": "RERANKER", "reranker.top_k": 3},
        "chat": {
            names.GEN_AI_OPERATION_NAME: "chat",
            names.GEN_AI_PROVIDER_NAME: "openai",
            names.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
            names.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
            names.GEN_AI_REQUEST_TEMPERATURE: 0.2,
            names.GEN_AI_USAGE_INPUT_TOKENS: rng.randrange(200, 2000),
            names.GEN_AI_USAGE_OUTPUT_TOKENS: rng.randrange(20, 400),
            names.LLM_TOKEN_COUNT_PROMPT: 0,
            "input.value": question,
            "output.value": answer,
        },
    }
    spans = [
        Span(
            trace_id=trace_id,
            span_id=root_id,
            name="POST /v1/chat/completions",
            kind=Span.SPAN_KIND_SERVER,
            start_time_unix_nano=start,
            end_time_unix_nano=start + 900_000_000,
            attributes=attrs({**common, "http.route": "/v1/chat/completions", names.EVAL_RUN_ID: "bench"}),
        )
    ]
    offset = start
    for name, values in children.items():
        duration = rng.randrange(5, 300) * 1_000_000
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=rng.randbytes(8),
                parent_span_id=root_id,
                name=name,
                kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=offset,
                end_time_unix_nano=offset + duration,
                attributes=attrs({**common, **values}),
            )
        )
        offset += duration
    return spans


def build_payloads(num_spans: int, batch: int) -> list[bytes]:
    rng, now_ns = random.Random(7), time.time_ns()
    spans: list[Span] = []
    number = 0
    while len(spans) < num_spans:
        spans.extend(trace_spans(rng, number, now_ns))
        number += 1
    payloads = []
    for first in range(0, num_spans, batch):
        request = ExportTraceServiceRequest()
        resource_spans = ResourceSpans(scope_spans=[ScopeSpans(spans=spans[first : first + batch])])
        resource_spans.resource.attributes.extend(
            attrs({"service.name": "bench-rag", "service.version": "1.0"})
        )
        resource_spans.scope_spans[0].scope.name = "bench"
        request.resource_spans.append(resource_spans)
        payloads.append(request.SerializeToString())
    return payloads


class Clients:
    """Concurrent senders that retry refused batches (429/503) after a short pause."""

    def __init__(self, url: str, payloads: list[bytes], num_clients: int) -> None:
        self.url, self.payloads, self.num_clients = url, payloads, num_clients
        self.rejected = self.retried = 0
        self._lock = threading.Lock()
        self._next = 0

    def run(self) -> None:
        threads = [threading.Thread(target=self._client) for _ in range(self.num_clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _client(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        with httpx.Client(timeout=120) as client:
            while True:
                with self._lock:
                    if self._next >= len(self.payloads):
                        return
                    body, self._next = self.payloads[self._next], self._next + 1
                while True:
                    response = client.post(
                        self.url, content=body, headers={"content-type": "application/x-protobuf"}
                    )
                    if response.status_code == 200:
                        rejected = ExportTraceServiceResponse.FromString(
                            response.content
                        ).partial_success.rejected_spans
                        with self._lock:
                            self.rejected += rejected
                        break
                    if response.status_code not in (429, 503):
                        raise RuntimeError(f"collector answered {response.status_code}: {response.text}")
                    with self._lock:
                        self.retried += 1
                    time.sleep(float(response.headers.get("retry-after", "1")) / 10)


def count_spans(url: str) -> int:
    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT count(*) FROM spans").fetchone()
        return int(row[0]) if row else 0


def watch_rss(pid: int, stop: threading.Event, peak: list[int]) -> None:
    """Peak RSS of the collector and its decode workers together."""
    process = psutil.Process(pid)
    while not stop.is_set():
        try:
            members = [process, *process.children(recursive=True)]
            peak[0] = max(peak[0], sum(member.memory_info().rss for member in members))
        except psutil.Error:
            return
        stop.wait(0.05)


def worker_rows(url: str, payloads: list[bytes], scratch: Path) -> list[bytes]:
    """The COPY bytes the collector's decode workers make of ``payloads`` (same code, limits, prices)."""
    settings = CollectorSettings(database_url=url, data_dir=scratch / "data")
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            prices = PriceBook(list_prices(session))
    finally:
        engine.dispose()
    limits, max_bytes = span_limits(settings), settings.collector_max_request_bytes
    chunks: list[bytes] = []
    for body in payloads:
        decoded = decode_body(DecodeJob(body, "protobuf", False, max_bytes, limits, None, prices))
        chunks.extend(chunk.data for chunk in decoded.packed.chunks)
    return chunks


def copy_from_client(url: str, chunks: list[bytes], num_connections: int = 1) -> float:
    """Rows/s of COPYing ``chunks`` from this process into the emptied ``spans`` table, split over
    ``num_connections`` connections COPYing at once (one transaction each)."""
    with psycopg.connect(url) as connection:
        empty_spans(connection)
    shares = [chunks[index::num_connections] for index in range(num_connections)]
    connections = [psycopg.connect(url) for _ in shares]
    try:
        for connection in connections:
            connection.execute("SET client_encoding TO 'UTF8'")
            connection.commit()
        threads = [
            threading.Thread(target=_copy_share, args=(connection, share))
            for connection, share in zip(connections, shares, strict=True)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    finally:
        for connection in connections:
            connection.close()
    return sum(chunk.count(b"\n") for chunk in chunks) / elapsed


def _copy_share(connection: psycopg.Connection[tuple[object, ...]], chunks: list[bytes]) -> None:
    with connection.cursor() as cursor, cursor.copy(COPY_SPANS) as copy:
        for chunk in chunks:
            copy.write(chunk)
    connection.commit()


def copy_from_server_file(url: str, chunks: list[bytes]) -> float | None:
    """Rows/s of PostgreSQL reading the same rows from a file itself; None when it cannot read it."""
    # the server may run as another user: a directory and file it can read, not the private scratch
    directory = Path(tempfile.mkdtemp(prefix="evallens-bench-copy-"))
    path = directory / "rows.copy"
    try:
        directory.chmod(0o755)
        path.write_bytes(b"".join(chunks))
        path.chmod(0o644)
        with psycopg.connect(url) as connection:
            empty_spans(connection)
            started = time.perf_counter()
            connection.execute(f"{COPY_SPANS.removesuffix('STDIN')} '{path}' WITH (ENCODING 'UTF8')")
            connection.commit()
            elapsed = time.perf_counter() - started
    except psycopg.Error as error:
        print(f"server-file COPY skipped: {error}".splitlines()[0])
        return None
    finally:
        path.unlink(missing_ok=True)
        directory.rmdir()
    return sum(chunk.count(b"\n") for chunk in chunks) / elapsed


def empty_spans(connection: psycopg.Connection[tuple[object, ...]]) -> None:
    """Empty ``spans`` (its partitions and indexes stay) and let autovacuum forget it."""
    connection.execute("TRUNCATE spans")
    connection.commit()
    connection.execute("CHECKPOINT")
    connection.commit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--spans", type=int, default=100_000, help="spans to send (and to COPY) (default: %(default)s)"
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent senders (default: %(default)s)")
    parser.add_argument(
        "--batch", type=int, default=500, help="spans per OTLP request (default: %(default)s)"
    )
    parser.add_argument(
        "--phoenix-spans",
        type=int,
        default=0,
        help="then send this many spans to Arize Phoenix (SQLite and PostgreSQL; bench/phoenix_ingest.py)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evallens-bench-") as scratch:
        server = start_embedded(Path(scratch) / "pg")
        try:
            ensure_database(embedded_url(server, "postgres"), "bench")
            url = embedded_url(server, "bench")
            upgrade(url)
            run(url, Path(scratch), args)
        finally:
            server.cleanup()


def run(url: str, scratch: Path, args: argparse.Namespace) -> None:
    print(f"building {args.spans} spans in {args.batch}-span batches ...", flush=True)
    payloads = build_payloads(args.spans, args.batch)
    port = free_port()
    environment = {
        "EVALLENS_DATABASE_URL": url,
        "EVALLENS_DATA_DIR": str(scratch / "data"),
        "EVALLENS_COLLECTOR_HTTP_PORT": str(port),
        "EVALLENS_COLLECTOR_GRPC_ENABLED": "false",
    }
    log_path = Path(tempfile.gettempdir()) / f"evallens-bench-collector-{port}.log"
    command = [sys.executable, "-m", "evallens", "collector"]
    process = ManagedProcess("collector", command, log_path, environment)
    with healthy(process, f"http://127.0.0.1:{port}/healthz", COLLECTOR_START_S, 60) as collector:
        peak, stop = [0], threading.Event()
        threading.Thread(target=watch_rss, args=(collector.pid, stop, peak), daemon=True).start()
        clients = Clients(f"http://127.0.0.1:{port}/v1/traces", payloads, args.clients)
        started = time.perf_counter()
        clients.run()
        while count_spans(url) < args.spans - clients.rejected:
            time.sleep(0.02)
        durable_s = time.perf_counter() - started
        stop.set()
    durable_rate = args.spans / durable_s
    print("raw COPY of the same rows into the same table ...", flush=True)
    chunks = worker_rows(url, payloads, scratch)
    client_rate = copy_from_client(url, chunks)
    file_rate = copy_from_server_file(url, chunks)
    parallel_rate = copy_from_client(url, chunks, num_connections=2)
    print(f"spans sent:                  {args.spans} ({len(payloads)} batches, {args.clients} clients)")
    print(f"durable spans/s (collector): {durable_rate:,.0f}  ({durable_s:.1f} s until all in PostgreSQL)")
    print(f"raw COPY, client bytes:      {client_rate:,.0f} rows/s, ratio {durable_rate / client_rate:.2f}")
    if file_rate is not None:
        print(f"raw COPY, server file:       {file_rate:,.0f} rows/s, ratio {durable_rate / file_rate:.2f}")
    print(f"raw COPY, 2 connections:     {parallel_rate:,.0f} rows/s (what a second writer could add)")
    print(f"peak collector RSS:          {peak[0] / 2**20:,.0f} MiB (with its decode workers)")
    print(f"rejected / retried:          {clients.rejected} spans / {clients.retried} requests", flush=True)
    if args.phoenix_spans:
        for backend in ([], ["--postgres"]):
            command = ["-m", "bench.phoenix_ingest", "--spans", str(args.phoenix_spans), *backend]
            command += ["--clients", str(args.clients), "--batch", str(args.batch)]
            subprocess.run([sys.executable, *command, "--compare-to", str(durable_rate)], cwd=REPO_ROOT)


if __name__ == "__main__":
    main()
