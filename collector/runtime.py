"""One collector process: OTLP/HTTP, OTLP/gRPC, the writer, the scraper and the price refresher."""

import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from sqlalchemy import inspect
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from collector._files import DirectoryLock
from collector.api import HttpLimits, create_app
from collector.grpc_service import create_grpc_server
from collector.log_store import LogReceiver
from collector.pipeline import Ingestor, QueueLimits
from collector.prices import PriceBook, list_prices, seed_default_prices
from collector.quarantine import DeadLetters, Quarantine
from collector.receive import TraceReceiver
from collector.scrape import Scraper
from collector.spool import Spool
from collector.stats import CollectorStats
from collector.validate import SpanLimits
from collector.workers import DecodePool
from collector.write import SpanWriter
from evallens.auth import AuthGate, KeyLookups
from evallens.db import create_db_engine, create_session_factory
from evallens.errors import EvallensError
from evallens.http_protocol import head_deadline_protocol
from evallens.settings import CollectorSettings

logger = logging.getLogger(__name__)

# below the default executor's threads (5 on one core), where HTTP looks keys up, the engine's pool of
# 5 connections and the 8 gRPC workers: keys being looked up never hold all of any of them
MAX_KEY_LOOKUPS_AT_ONCE = 4
# in threads of their own, holding at most as many of the engine's connections (of 5, and 10 more
# beyond): logs waiting on PostgreSQL leave the lookups theirs
MAX_LOG_STORES_AT_ONCE = 2


class SchemaMissing(EvallensError):
    """The database has no spans table yet."""


class Collector:
    """Everything ``evallens collector`` runs, built from settings and a database URL."""

    def __init__(self, settings: CollectorSettings, database_url: str) -> None:
        self.settings = settings
        # one owner per spool: two writers replaying the same files would race (and did)
        self._lock = DirectoryLock(settings.spool_dir)
        self.stats = CollectorStats()
        self.engine = create_db_engine(database_url, connect_timeout_s=settings.database_connect_timeout_s)
        self.spool = (
            Spool(settings.spool_dir, settings.collector_spool_max_bytes, settings.collector_project_share)
            if settings.collector_spool_enabled
            else None
        )
        writer = SpanWriter(
            database_url, settings.database_connect_timeout_s, settings.collector_max_new_days_per_flush
        )
        self.quarantine = Quarantine(writer, DeadLetters(settings.spool_dir / "quarantine"), self.stats)
        self.ingestor = Ingestor(writer, self.spool, self.quarantine, queue_limits(settings), self.stats)
        self.pool = DecodePool(
            settings.collector_decode_workers,
            settings.collector_max_inflight_bytes,
            settings.collector_retry_after_s,
            settings.collector_project_share,
        )
        self.receiver = TraceReceiver(
            self.ingestor,
            self.pool,
            span_limits(settings),
            settings.collector_max_request_bytes,
            self.stats,
            PriceBook([]),
        )
        self.gate = AuthGate(settings, create_session_factory(self.engine))
        self.key_lookups = KeyLookups(
            settings.collector_key_attempts_per_minute,
            MAX_KEY_LOOKUPS_AT_ONCE,
            settings.collector_retry_after_s,
        )
        self.log_receiver = LogReceiver(
            self.engine,
            span_limits(settings),
            settings.collector_max_request_bytes,
            settings.collector_retry_after_s,
            MAX_LOG_STORES_AT_ONCE,
        )
        self.app = create_app(
            self.receiver,
            HttpLimits(
                settings.collector_max_request_bytes,
                settings.collector_body_idle_timeout_s,
                settings.collector_body_timeout_s,
                settings.collector_max_concurrent_requests,
                settings.collector_retry_after_s,
                settings.collector_project_share,
            ),
            self.health,
            self.gate,
            self.log_receiver,
            lookups=self.key_lookups,
        )
        self.scraper = Scraper(
            self.engine,
            settings.collector_scrape_targets,
            settings.collector_scrape_interval_s,
            settings.collector_scrape_timeout_s,
            self.stats,
            settings.collector_scrape_project,
        )
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._grpc: Any = None
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None
        self.http_port = 0
        self.grpc_port = 0

    def start(self) -> None:
        """Check the schema, load prices, bind the ports and start the background work (not HTTP serving)."""
        self._check_schema()
        self.refresh_prices(seed=True)
        self.pool.start()
        self.ingestor.start()
        self._socket = bind_socket(self.settings.collector_http_host, self.settings.collector_http_port)
        self.http_port = self._socket.getsockname()[1]
        if self.settings.collector_grpc_enabled:
            address = f"{self.settings.collector_grpc_host}:{self.settings.collector_grpc_port}"
            self._grpc, self.grpc_port = create_grpc_server(
                self.receiver,
                address,
                self.settings.collector_grpc_workers,
                self.settings.collector_max_request_bytes,
                self.gate,
                self.settings.collector_max_concurrent_requests,
                self.log_receiver,
                (
                    self.settings.collector_grpc_max_connection_age_s,
                    self.settings.collector_grpc_connection_grace_s,
                ),
                lookups=self.key_lookups,
                project_share=self.settings.collector_project_share,
                retry_after_s=self.settings.collector_retry_after_s,
            )
            self._grpc.start()
        self.scraper.start()
        self._spawn(self._refresh_prices_forever, "collector-prices")

    def serve(self, ready: Callable[["Collector"], None] | None = None) -> None:
        """Serve until SIGTERM/SIGINT, then shut down cleanly (must run in the main thread)."""
        stop_requested = threading.Event()
        previous = {
            number: signal.signal(number, lambda *_: stop_requested.set())
            for number in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self.start_in_background()
            if ready is not None:
                ready(self)
            while not stop_requested.wait(0.5):
                pass
        finally:
            self.stop()
            for number, handler in previous.items():
                signal.signal(number, handler)

    def start_in_background(self, timeout_s: float = 30.0) -> None:
        """Start and serve HTTP from a thread; ``stop`` ends it. Handles no signals (``serve`` does)."""
        self.start()
        self._server = uvicorn.Server(self._uvicorn_config())
        server, sock = self._server, self._listening_socket()
        self._spawn(lambda: server.run(sockets=[sock]), "collector-http")
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the collector's HTTP server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop receiving, finish in-flight requests, write what is queued, stop every thread."""
        if self._server is not None:
            self._server.should_exit = True
        self._stop.set()
        if self._grpc is not None:
            self._grpc.stop(grace=10).wait()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        self._threads.clear()
        self.scraper.stop()
        self.log_receiver.close()
        self.ingestor.stop()
        self.pool.close()
        if self._socket is not None:
            self._socket.close()
        self.engine.dispose()
        self._lock.release()

    def health(self) -> dict[str, Any]:
        """``/healthz``: ok while the writer runs and spans can be made durable (PostgreSQL up, or room
        in the spool); with the quarantine and the decode budget as figures."""
        writer_running = self.ingestor.writer_healthy
        spool_room = self.spool is not None and not self.spool.full
        return {
            "ok": writer_running and (self.ingestor.database_up or spool_room),
            "database_up": self.ingestor.database_up,
            "writer_running": writer_running,
            "queued_spans": self.ingestor.num_queued_spans,
            "spooled_bytes": self.spool.num_bytes if self.spool is not None else 0,
            "spool_full": self.spool is not None and self.spool.full,
            "quarantined_spans": self.quarantine.num_quarantined,
            "dead_letter_files": self.quarantine.num_files,
            "decode_bytes_in_flight": self.pool.bytes_in_flight,
        }

    def refresh_prices(self, seed: bool = False) -> None:
        """Reload the price table (adding the shipped defaults first when ``seed``)."""
        try:
            with Session(self.engine) as session, session.begin():
                if seed:
                    seed_default_prices(session)
                self.receiver.prices = PriceBook(list_prices(session))
        except SQLAlchemyError as error:
            logger.warning("cannot load model prices (keeping the previous ones): %s", error)

    def _refresh_prices_forever(self) -> None:
        while not self._stop.wait(self.settings.collector_price_refresh_s):
            self.refresh_prices()

    def _check_schema(self) -> None:
        try:
            present = inspect(self.engine).has_table("spans")
        except SQLAlchemyError as error:
            logger.warning("PostgreSQL is unreachable at start (%s); spans will be spooled", error)
            return
        if not present:
            raise SchemaMissing("the database has no spans table: run `evallens db upgrade` first")

    def _listening_socket(self) -> socket.socket:
        if self._socket is None:
            raise RuntimeError("start() binds the socket first")
        return self._socket

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _uvicorn_config(self) -> uvicorn.Config:
        return uvicorn.Config(
            self.app,
            http=head_deadline_protocol(self.settings.collector_request_head_timeout_s),
            log_level="warning",
            lifespan="off",  # no limit_concurrency: it counts connections, keyless ones too (RequestSlots)
            proxy_headers=False,  # a client's address is its TCP peer's, never one it names itself
            timeout_graceful_shutdown=10,
        )


def queue_limits(settings: CollectorSettings) -> QueueLimits:
    """The queue bounds in ``settings``."""
    return QueueLimits(
        max_spans=settings.collector_queue_max_spans,
        max_bytes=settings.collector_queue_max_bytes,
        flush_max_spans=settings.collector_flush_max_spans,
        project_share=settings.collector_project_share,
        retry_after_s=settings.collector_retry_after_s,
        db_retry_s=settings.collector_db_retry_s,
        restart_backoff_s=settings.collector_writer_backoff_s,
        restart_backoff_max_s=max(
            settings.collector_writer_backoff_max_s, settings.collector_writer_backoff_s
        ),
    )


def span_limits(settings: CollectorSettings) -> SpanLimits:
    """What ``collector.validate`` accepts, from ``settings``."""
    return SpanLimits(
        max_age_s=settings.collector_span_max_age_days * 86_400,
        max_future_s=settings.collector_span_max_future_s,
        max_duration_s=settings.collector_span_max_duration_s,
        max_key_chars=settings.collector_max_key_chars,
        max_text_chars=settings.collector_max_text_chars,
        max_tokens=settings.collector_max_tokens,
        max_cost_usd=settings.collector_max_cost_usd,
        max_spans_per_request=settings.collector_max_spans_per_request,
        max_packed_bytes=settings.collector_queue_max_bytes,
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 picks a free port)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise EvallensError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
