"""Every 500 is counted once in ``evallens_errors_total`` (real service, real PostgreSQL, uvicorn), and so is
chat's 502 for an OpenAI-compatible upstream on a real socket whose answer breaks off into text that is not
JSON.

A 500 outside chat (here PostgreSQL without the knowledge base's tables) was counted nowhere: the error
handler answering it left the count to the chat path, which counts only its own."""

import json
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI, Response
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy.orm import Session

from evallens.auth import Scope, create_key
from evallens.db import create_db_engine
from evallens.service import create_app
from evallens.service.engines import OpenAIEngine, OpenAIOptions
from evallens.service.engines.base import GenerationChunk, Prompt, SamplingOptions
from evallens.telemetry import attributes as attr
from tests.evallens.service.conftest import (
    LoopThread,
    counted_since,
    errors_counted,
    make_settings,
    serving,
    wait_until,
)

pytestmark = pytest.mark.slow

DOCUMENT = {"id": "refunds", "title": "Refunds", "text": "Refunds reach your card in 5 to 10 days."}
CHAT = {"messages": [{"role": "user", "content": "How long do card refunds take?"}], "max_tokens": 4}
UPSTREAM_MODEL = "garbled"


def garbled_upstream() -> FastAPI:
    """An OpenAI-compatible server whose answers send one token, then an event that is not JSON."""
    upstream = FastAPI()

    @upstream.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": UPSTREAM_MODEL, "object": "model"}]}

    @upstream.post("/v1/chat/completions")
    async def chat() -> Response:
        first = {"choices": [{"index": 0, "delta": {"content": "Refunds"}, "finish_reason": None}]}
        events = f"data: {json.dumps(first)}\n\ndata: {{not json\n\n"
        return Response(events, media_type="text/event-stream")

    return upstream


@contextmanager
def openai_service(
    service_loop: LoopThread,
    upstream_app: FastAPI,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    engine_type: type[OpenAIEngine] = OpenAIEngine,
    **overrides: Any,
) -> Iterator[tuple[httpx.Client, OpenAIEngine]]:
    """The service on an OpenAI engine (of ``engine_type``) whose upstream is ``upstream_app``, once ready
    (no vLLM to start)."""
    with serving(service_loop, upstream_app) as upstream:
        engine = engine_type(OpenAIOptions(base_url=f"{upstream}/v1", model=UPSTREAM_MODEL))
        settings = make_settings(
            service_data_dir, tiny_model_path, engine="openai", retrieval_enabled=False, **overrides
        )
        app = create_app(settings, engine=engine, tracer_provider=tracer_provider)
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
            yield client, engine
        service_loop.run(engine.close())


def test_a_key_lookup_postgres_refuses_is_a_500_counted_once_as_internal(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    database_url: str,
) -> None:
    """An API key PostgreSQL refused to look up (no api_keys table) was a 503 with Retry-After, as if
    PostgreSQL were away: clients retried what retrying never mends. The service answers this 500 itself
    (nothing is raised on to the server), so it keeps the connection: it was told Connection: close, as
    the 500 of an error the server sees, and the server closed it for that header alone."""
    engine = create_db_engine(database_url)
    with Session(engine) as session, session.begin():
        key = create_key(session, "shop", Scope.INGEST).key
    engine.dispose()
    with openai_service(
        service_loop,
        garbled_upstream(),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        database_url=database_url,
        auth_enabled=True,
    ) as (client, _):
        with psycopg.connect(database_url, autocommit=True) as connection:
            connection.execute("DROP TABLE api_keys")
        before = errors_counted(client)
        answer = client.get("/v1/documents", headers={"authorization": f"Bearer {key}"})
        counted = counted_since(before, client)
    assert answer.status_code == 500, answer.text
    assert answer.json()["error"]["code"] == "internal_error"
    assert "retry-after" not in answer.headers
    assert "connection" not in answer.headers
    assert counted == {"internal": 1.0}


def test_a_documents_500_is_counted_once_as_internal(serve: Any, database_url: str) -> None:
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        with psycopg.connect(database_url, autocommit=True) as connection:
            connection.execute("DROP TABLE chunks, documents")
        before = errors_counted(client)
        answers = [
            client.get("/v1/documents"),
            client.post("/v1/documents", json=DOCUMENT),
            client.delete("/v1/documents/refunds"),
        ]
        counted = counted_since(before, client)
    assert [answer.status_code for answer in answers] == [500] * 3, [answer.text for answer in answers]
    assert counted == {"internal": 3.0}


def test_an_engine_reply_that_is_not_a_stream_event_is_a_502_counted_once(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path, tracer_provider: TracerProvider
) -> None:
    """An upstream event that is not JSON was a bare 500 counted under ``JSONDecodeError`` (a 503 on the
    first event): it is the engine's fault, a 502 saying so, counted once under a bounded kind; after the
    first token, said in the stream. The chat path counts its own errors before the error handler sees
    them: the handler must not count them again (no other real way makes the chat path raise an
    unexpected error now, so this is where counting once is checked)."""
    with openai_service(
        service_loop, garbled_upstream(), service_data_dir, tiny_model_path, tracer_provider
    ) as (client, _):
        before = errors_counted(client)
        answered = client.post("/v1/chat/completions", json=CHAT)
        with client.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as streamed:
            assert streamed.status_code == 200  # the first token came before the rest broke off
            events = streamed.read().decode()
        counted = counted_since(before, client)
    assert answered.status_code == 502, answered.text
    error = answered.json()["error"]
    assert error["code"] == "engine_bad_reply"
    assert "not an OpenAI stream event: 'data: {not json'" in error["message"]
    assert "engine_bad_reply" in events and "Refunds" in events
    assert counted == {"engine_reply": 2.0}


class AdapterBug(Exception):
    """What a bug in an engine adapter raises: no engine error, nothing the chat path expects."""


class BuggyEngine(OpenAIEngine):
    """An OpenAI engine with a bug: its stream fails with ``AdapterBug`` after the upstream's first token."""

    async def stream(
        self, request_id: str, prompt: Prompt, sampling: SamplingOptions
    ) -> AsyncGenerator[GenerationChunk, None]:
        async with aclosing(super().stream(request_id, prompt, sampling)) as chunks:
            async for chunk in chunks:
                yield chunk
                raise AdapterBug("a bug after the first token")


def test_a_chat_500_is_counted_as_internal_and_its_span_names_the_error_class(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """The chat path counted its 500s under the exception's class name (``AdapterBug`` here, any class a
    bug raises elsewhere): a label set without bound in the errors metric, where every other 500 is
    ``internal``. The span keeps the class as OpenTelemetry's ``error.type``: that is where to look."""
    with openai_service(
        service_loop, garbled_upstream(), service_data_dir, tiny_model_path, tracer_provider, BuggyEngine
    ) as (client, _):
        before = errors_counted(client)
        answer = client.post("/v1/chat/completions", json=CHAT)
        counted = counted_since(before, client)
    assert answer.status_code == 500, answer.text
    assert answer.json()["error"]["code"] == "internal_error"
    assert counted == {"internal": 1.0}
    (span,) = [span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")]
    assert (span.attributes or {})[attr.ERROR_TYPE] == "AdapterBug"
    assert span.status.description == "AdapterBug"
