"""Issue 17: ``/readyz`` waits for the engine, the embedder and the indexes; a chat request spends no
embedding on a cache that can never answer it, and embeds its question once for cache and retrieval.

The embedder is the real MiniLM behind a recording wrapper; the engine is the session's real vLLM.
"""

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evallens.service import create_app
from evallens.service.caches import CacheMetrics
from evallens.service.chat.answers import AnswerCache, CannedAnswer, cache_scope
from evallens.service.chat.preflight import DEFAULT_TENANT, Preflight
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines import SamplingOptions, VllmEngine, vllm_options
from evallens.service.guards import GuardMetrics
from evallens.service.guards.degrade import ENGINE_FALLBACK_CACHE
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.settings import RagSettings, ServiceSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry.attributes import DEFAULT_PROJECT
from tests.evallens.service.conftest import (
    TEST_MAX_MODEL_LEN,
    LoopThread,
    RecordingEmbedder,
    make_settings,
    serving,
    wait_until,
    warmed_up,
)
from tests.evallens.service.test_rag_wiring import DOCUMENTS, QUESTION, RAG, load
from tests.evallens.test_cli_errors import assert_one_line, run_cli

CACHES = {"cache_exact_enabled": True, "cache_semantic_enabled": True}


class SlowLoadingEmbedder(RecordingEmbedder):
    """The real embedder whose model "loads" only when the test says so (a slow disk, a big model)."""

    def __init__(self, settings: RagSettings) -> None:
        super().__init__(settings)
        self.loaded = threading.Event()

    def embed(self, texts: list[str]) -> Any:
        assert self.loaded.wait(120), "the test never let the model load"
        return super().embed(texts)


@contextmanager
def app_client(
    loop: LoopThread,
    engine: VllmEngine,
    provider: TracerProvider,
    app_settings: Any,
    embedder: RecordingEmbedder,
) -> Iterator[tuple[FastAPI, httpx.Client]]:
    app = create_app(app_settings, engine=engine, tracer_provider=provider, embedder=embedder)
    with serving(loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield app, client


def ask(client: httpx.Client, question: str = QUESTION, **body: Any) -> httpx.Response:
    payload = {"messages": [{"role": "user", "content": question}], "max_tokens": 4, **body}
    response = client.post("/v1/chat/completions", json=payload)
    assert response.status_code == 200, response.text
    return response


def test_readyz_waits_for_the_embedder_and_the_indexes(
    serve: Any,
    database_url: str,
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    rag_settings: RagSettings,
) -> None:
    with serve(database_url=database_url, **RAG) as loader:
        load(loader)  # a knowledge base from an earlier run of the service
    embedder = SlowLoadingEmbedder(rag_settings)
    app_settings = make_settings(service_data_dir, tiny_model_path, database_url=database_url, **RAG)
    with app_client(service_loop, vllm_engine, tracer_provider, app_settings, embedder) as (app, client):
        waiting = client.get("/readyz")
        assert waiting.status_code == 503
        assert waiting.json() == {"ready": False, "waiting_for": ["embedder", "indexes"], "failed": []}
        assert client.get("/healthz").status_code == 200
        retriever = app.state.chat.preflight.retriever
        assert retriever.keyword_index.num_chunks(DEFAULT_PROJECT) == 0

        embedder.loaded.set()
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        assert client.get("/readyz").json() == {"ready": True}
        assert embedder.embedded == ["warm up", "warm up"]  # the model, then the vector index
        assert retriever.keyword_index.num_chunks(DEFAULT_PROJECT) >= len(
            DOCUMENTS
        )  # built before any question

        embedder.embedded.clear()
        answer = ask(client, temperature=0).json()
        assert answer["evallens"]["cited_ids"]
        # once, for the semantic cache and retrieval alike (compression embeds the chunks' sentences)
        assert embedder.embedded.count(QUESTION) == 1
        embedder.embedded.clear()
        sampled = ask(client, "How heavy is the TR-4410 tent?", temperature=0.9).json()
        assert sampled["evallens"]["retrieved_ids"][0] == "tent-tr4410"
        assert embedder.embedded.count("How heavy is the TR-4410 tent?") == 1  # retrieval's own


def test_a_request_that_can_never_be_cached_is_not_embedded(
    span_exporter: InMemorySpanExporter,
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    rag_settings: RagSettings,
) -> None:
    embedder = RecordingEmbedder(rag_settings)
    app_settings = make_settings(service_data_dir, tiny_model_path, **CACHES)
    with app_client(service_loop, vllm_engine, tracer_provider, app_settings, embedder) as (_, client):
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        embedder.embedded.clear()
        ask(client, temperature=0.8)
        ask(client, temperature=0, ignore_eos=True)
        ask(client, temperature=0, min_tokens=2)
        no_cache = {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 4, "temperature": 0}
        client.post("/v1/chat/completions", json=no_cache, headers={"cache-control": "no-cache"})
        assert embedder.embedded == []  # none of them is ever stored, so none is looked up

        first = ask(client, temperature=0).json()
        close = ask(client, "How long do card refunds take", temperature=0).json()
        assert embedder.embedded == [QUESTION, "How long do card refunds take"]
        assert close["evallens"]["cache"] == {"exact": False, "semantic": True}
        assert close["choices"][0]["message"]["content"] == first["choices"][0]["message"]["content"]
    # A cached answer took no generation: no tokens/s for it (it would be millions), only for the engine's.
    assert close["usage"]["completion_tokens"] > 1
    rates = {
        span.attributes[attr.GEN_AI_RESPONSE_ID]: span.attributes.get(attr.OUTPUT_TOKENS_PER_SECOND)
        for span in span_exporter.get_finished_spans()
        if span.attributes and attr.GEN_AI_RESPONSE_ID in span.attributes
    }
    assert rates[first["id"]] is not None and rates[close["id"]] is None


def test_a_failed_engine_embeds_the_question_only_to_find_a_stand_in(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    rag_settings: RagSettings,
) -> None:
    embedder = RecordingEmbedder(rag_settings)
    # A first-token budget no engine can meet: every engine call fails.
    app_settings = make_settings(service_data_dir, tiny_model_path, ttft_budget_s=0.000001, **CACHES)
    with app_client(service_loop, vllm_engine, tracer_provider, app_settings, embedder) as (app, client):
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        stored = CannedAnswer("Refunds take 5 to 10 business days.", num_output_tokens=9)
        vector = embedder.embed_one(QUESTION)
        scope = cache_scope(DEFAULT_PROJECT, DEFAULT_TENANT, None)
        app.state.chat.answers.semantic.store(scope, QUESTION, vector, stored, project=DEFAULT_PROJECT)
        embedder.embedded.clear()

        sampled = ask(client, "How long do card refunds take", temperature=0.8).json()
    assert embedder.embedded == ["How long do card refunds take"]  # embedded when the engine failed
    assert sampled["choices"][0]["message"]["content"] == stored.text
    assert sampled["evallens"]["cache"] == {"exact": False, "semantic": True}
    assert sampled["evallens"]["degraded_reason"] == ENGINE_FALLBACK_CACHE


def test_the_preflight_embeds_only_for_a_cache_that_can_answer(
    embedder: RecordingEmbedder, tracer_provider: TracerProvider
) -> None:
    """The same rule without the engine: which requests the preflight embeds for the semantic cache."""
    settings = ServiceSettings(cache_exact_enabled=True, cache_semantic_enabled=True, retrieval_enabled=False)
    tracer = tracer_provider.get_tracer("test")
    answers = AnswerCache(
        settings, metrics=CacheMetrics.create(), tracer=tracer, generations=KnowledgeBaseGenerations()
    )
    preflight = Preflight(
        settings, answers=answers, embedder=embedder, retriever=None, tracer=tracer,
        guard_metrics=GuardMetrics.create(),
    )  # fmt: skip

    def embeds(use_caches: bool = True, **body: Any) -> list[str]:
        request = ChatCompletionRequest(messages=[{"role": "user", "content": QUESTION}], **body)
        sampling = SamplingOptions(
            max_tokens=4, temperature=body.get("temperature", 1.0), top_p=1.0, seed=body.get("seed")
        )
        embedder.embedded.clear()
        asyncio.run(
            preflight.run(
                request, sampling, None, "fingerprint", project=DEFAULT_PROJECT, use_caches=use_caches
            )
        )
        return list(embedder.embedded)

    assert embeds(temperature=0.8) == []
    assert embeds(temperature=0, ignore_eos=True) == []
    assert embeds(temperature=0, min_tokens=2) == []
    assert embeds(use_caches=False, temperature=0) == []
    assert embeds(temperature=0) == [QUESTION]
    assert embeds(temperature=0.8, seed=7) == [QUESTION]  # seeded: the same answer again


class StallingEmbedder(RecordingEmbedder):
    """The real embedder, which stalls while the test holds ``running`` clear (a busy thread pool, a
    contended CPU)."""

    def __init__(self, settings: RagSettings) -> None:
        super().__init__(settings)
        self.running = threading.Event()
        self.running.set()

    def embed(self, texts: list[str]) -> Any:
        assert self.running.wait(120), "the test never let the embedder run again"
        return super().embed(texts)


def test_a_stalled_question_embedding_is_cut_by_the_first_token_budget(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    rag_settings: RagSettings,
) -> None:
    """The preflight embeds a cacheable question for the semantic cache before any budget applied: the
    request waited for the embedding however long it took, past its first-token budget (measured from
    its arrival), and only then went on (the client got no 504 while it stalled)."""
    embedder = StallingEmbedder(rag_settings)
    app_settings = make_settings(service_data_dir, tiny_model_path, ttft_budget_s=2.0, **CACHES)
    with app_client(service_loop, vllm_engine, tracer_provider, app_settings, embedder) as (_, client):
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        embedder.running.clear()
        try:
            payload = {"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 4, "temperature": 0}
            response = client.post("/v1/chat/completions", json=payload, timeout=60)  # liveness only
        finally:
            embedder.running.set()
        assert response.status_code == 504, response.text
        assert response.json()["error"]["code"] == "time_to_first_token_timeout"
        assert ask(client, temperature=0).status_code == 200  # the service goes on answering


def test_a_stalled_embedding_for_a_stand_in_is_cut_by_the_total_budget(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    rag_settings: RagSettings,
) -> None:
    """When the engine fails, the question is embedded to find a semantic-cache stand-in, and that
    embedding had no time limit: with the embedder stalled, the request waited for it however long it
    took, past its total budget, with no 504 (a failing engine and a busy thread pool come together)."""
    embedder = StallingEmbedder(rag_settings)
    # A first-token budget no engine can meet: every engine call fails, and a stand-in is looked for.
    budgets = {"ttft_budget_s": 0.000001, "total_budget_s": 2.0}
    app_settings = make_settings(service_data_dir, tiny_model_path, **budgets, **CACHES)
    with app_client(service_loop, vllm_engine, tracer_provider, app_settings, embedder) as (_, client):
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        embedder.running.clear()
        try:
            # sampled: never embedded before the engine, only for its stand-in
            payload = {
                "messages": [{"role": "user", "content": QUESTION}],
                "max_tokens": 4,
                "temperature": 0.8,
            }
            response = client.post("/v1/chat/completions", json=payload, timeout=60)  # liveness only
        finally:
            embedder.running.set()
        assert response.status_code == 504, response.text
        assert response.json()["error"]["code"] == "total_timeout"
        # it was the stand-in's embedding that stalled (it ends once let run)
        assert wait_until(lambda: QUESTION in embedder.embedded, timeout_s=30)


def test_an_engine_that_cannot_start_is_named_as_failed(tmp_path: Path) -> None:
    """A waiter on ``/readyz`` learns that the engine failed rather than polling until it gives up."""
    from evallens.service.engines.routing import EngineRouter
    from evallens.service.ops import Readiness

    missing = tmp_path / "no-model"
    missing.mkdir()
    engine = VllmEngine(vllm_options(make_settings(tmp_path, missing)))
    readiness = Readiness(EngineRouter(engine), {})
    asyncio.run(readiness.warm_up())
    assert readiness.waiting_for() == [f"engine {engine.model_name}"]
    assert readiness.failed == {f"engine {engine.model_name}"}


@pytest.mark.parametrize(
    ("command", "variable"),
    [
        (["service"], "EVALLENS_ROUTE_SMALL_MODEL_PATH"),
        (["service", "config"], "EVALLENS_ROUTE_SMALL_MODEL_PATH"),
        (["service"], "EVALLENS_MODEL_PATH"),
    ],
    ids=["service-small-model", "service-config-small-model", "service-model"],
)
def test_a_model_directory_without_a_model_is_one_line_at_start(
    command: list[str], variable: str, tmp_path: Path, tiny_model_path: Path
) -> None:
    """A model directory set for the service that holds no model: the service started anyway, and the
    engine's start failed in the background with a traceback (telling to run `evallens model pull`, which
    prepares neither), ``/readyz`` 503 for good; ``service config`` gave a fingerprint for no weights."""
    empty = tmp_path / "model"
    empty.mkdir()
    env = {"EVALLENS_DATA_DIR": str(tmp_path / "data"), "EVALLENS_MODEL_PATH": str(tiny_model_path)}
    result = run_cli(*command, env={**env, variable: str(empty)})
    assert_one_line(result, f"{variable}: no model at {empty} (no config.json there)")


def test_the_small_engine_the_app_made_beside_a_main_engine_passed_in_closes_with_the_app(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    tmp_path: Path,
) -> None:
    """A caller passing only its main engine, with a small-route model in the settings: the app made the
    small engine and started it, and left it open at shutdown (its engine core lived on). The main
    engine is the caller's, and stays up."""
    small_path = tmp_path / "tiny-small"  # the tiny model under a name of its own
    small_path.symlink_to(tiny_model_path, target_is_directory=True)
    settings = make_settings(service_data_dir, tiny_model_path, route_small_model_path=small_path)
    app = create_app(settings, engine=vllm_engine, tracer_provider=tracer_provider)
    small = app.state.engines.small
    assert small is not None and small is not vllm_engine
    try:
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert wait_until(lambda: warmed_up(client), timeout_s=300)
            assert client.get("/readyz").status_code == 200  # the small engine started
        closed = not small.is_ready()
    finally:
        service_loop.run(small.close())  # without the fix, what the app left open
    assert closed
    assert vllm_engine.is_ready()


def test_an_engine_start_the_user_can_mend_is_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A model directory that holds no model: the warm-up logged the engine's start failure with a full
    traceback, burying the one line that says what to mend."""
    from evallens.service.engines.routing import EngineRouter
    from evallens.service.ops import Readiness

    missing = tmp_path / "no-model"
    missing.mkdir()
    engine = VllmEngine(vllm_options(make_settings(tmp_path, missing)))
    caplog.set_level(logging.ERROR, logger="evallens.service.ops")
    asyncio.run(Readiness(EngineRouter(engine), {}).warm_up())
    [record] = [record for record in caplog.records if record.name == "evallens.service.ops"]
    said = record.getMessage()
    assert said.startswith(f"engine no-model failed to start: no model at {missing}"), said
    assert "\n" not in said and record.exc_info is None


class BrokenEngine:
    """A fake for a fault no setting causes: an engine whose start fails on a bug of its own."""

    model_name = "broken"

    async def start(self) -> None:
        raise KeyError("a bug")

    def is_ready(self) -> bool:
        return False

    def failure(self) -> str | None:
        return None


def test_an_unexpected_engine_start_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    from evallens.service.engines.routing import EngineRouter
    from evallens.service.ops import Readiness

    caplog.set_level(logging.ERROR, logger="evallens.service.ops")
    readiness = Readiness(EngineRouter(BrokenEngine()), {})  # type: ignore[arg-type]
    asyncio.run(readiness.warm_up())
    [record] = [record for record in caplog.records if record.name == "evallens.service.ops"]
    assert record.getMessage() == "engine broken failed to start"
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert readiness.failed == {"engine broken"}


def test_a_setting_vllm_refuses_is_one_log_line_saying_which(
    tmp_path: Path, tiny_model_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A context window past the model's: vLLM's config refused it with a pydantic error, logged as a
    traceback whose message went on to advise an environment variable that lifts the check."""
    from evallens.service.engines.routing import EngineRouter
    from evallens.service.ops import Readiness

    too_long = 2 * TEST_MAX_MODEL_LEN
    engine = VllmEngine(vllm_options(make_settings(tmp_path, tiny_model_path, max_model_len=too_long)))
    caplog.set_level(logging.ERROR, logger="evallens.service.ops")
    readiness = Readiness(EngineRouter(engine), {})
    asyncio.run(readiness.warm_up())
    [record] = [record for record in caplog.records if record.name == "evallens.service.ops"]
    said = record.getMessage()
    assert said.startswith(
        f"engine tiny-llama failed to start: vLLM refused the engine's settings: User-specified "
        f"max_model_len ({too_long}) is greater than the derived max_model_len"
    ), said
    assert "\n" not in said and "VLLM_ALLOW_LONG_MAX_MODEL_LEN" not in said and record.exc_info is None
    assert readiness.failed == {"engine tiny-llama"} and not engine.is_ready()
