"""Every 500 is counted once in ``evallens_errors_total`` (real service, real PostgreSQL, uvicorn), and so is
chat's 502 for an OpenAI-compatible upstream on a real socket whose answer breaks off into text that is not
JSON, and its 503 for an upstream whose stream sends an error event.

A 500 outside chat (here PostgreSQL without the knowledge base's tables) was counted nowhere: the error
handler answering it left the count to the chat path, which counts only its own."""

import json
from collections import Counter
from collections.abc import AsyncGenerator, Iterator
from contextlib import ExitStack, aclosing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
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


def chunk(**choice: Any) -> dict[str, Any]:
    """A stream event of one choice: a token and no finish reason, unless ``choice`` says otherwise."""
    return {"choices": [{"index": 0, "delta": {"content": "Refunds"}, "finish_reason": None, **choice}]}


def usage(**tokens: Any) -> dict[str, Any]:
    return {
        "choices": [],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10, **tokens},
    }


# Stream events with a field OpenAI's protocol types otherwise, by the question whose upstream answer is
# that one event, with what the 502 says is wrong
MALFORMED_EVENTS: dict[str, tuple[Any, str]] = {
    "finish reason a number": (chunk(finish_reason=7), "choices[0].finish_reason is a number, not a string"),
    "finish reason an object": (chunk(finish_reason={"reason": "stop"}), "finish_reason is an object"),
    "finish reason a list": (chunk(finish_reason=["stop"]), "finish_reason is an array, not a string"),
    "finish reason true": (chunk(finish_reason=True), "finish_reason is a boolean, not a string"),
    "finish reason no name": (
        chunk(finish_reason="stop " * 20),
        "finish_reason is not a finish reason's name",
    ),
    "finish reason a surrogate": (chunk(finish_reason="\ud800"), "is not a finish reason's name"),
    "choices an object": ({"choices": {"0": chunk()["choices"][0]}}, "choices is an object, not an array"),
    "choices text": ({"choices": "Refunds"}, "choices is a string, not an array"),
    "a choice not an object": ({"choices": ["Refunds"]}, "choices[0] is a string, not an object"),
    "delta text": (chunk(delta="Refunds"), "choices[0].delta is a string, not an object"),
    "delta a list": (chunk(delta=["Refunds"]), "choices[0].delta is an array, not an object"),
    "content a number": (chunk(delta={"content": 5}), "choices[0].delta.content is a number, not a string"),
    "content a list": (chunk(delta={"content": ["Refunds"]}), "content is an array, not a string"),
    "content an object": (chunk(delta={"content": {"text": "R"}}), "content is an object, not a string"),
    "content a lone surrogate": (chunk(delta={"content": "R\ud83d"}), "content is not Unicode text"),
    "usage text": ({"choices": [], "usage": "10 tokens"}, "usage is a string, not an object"),
    "prompt tokens as text": (usage(prompt_tokens="9"), 'usage.prompt_tokens is "9", not a count'),
    "completion tokens a fraction": (
        usage(completion_tokens=1.5),
        "usage.completion_tokens is 1.5, not a count",
    ),
    "completion tokens true": (usage(completion_tokens=True), "completion_tokens is true, not a count"),
    "prompt tokens negative": (usage(prompt_tokens=-9), "usage.prompt_tokens is -9, not a count"),
    "prompt tokens past int64": (usage(prompt_tokens=2**63), "prompt_tokens is 9223372036854775808, not"),
    "prompt tokens null": (usage(prompt_tokens=None), "usage.prompt_tokens is null, not a count"),
    "an event not an object": (["Refunds"], "(not a JSON object)"),
}


# The last of a question's events: the upstream closes the stream there, without [DONE]
STREAM_CUT = object()


def scripted_upstream(events_by_question: dict[str, list[Any]], asked: list[str] | None = None) -> FastAPI:
    """An OpenAI-compatible server answering a question in ``events_by_question`` with those events, each
    question it is asked appended to ``asked``."""
    upstream = FastAPI()

    @upstream.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": UPSTREAM_MODEL, "object": "model"}]}

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        messages = (await request.json())["messages"]
        (question,) = [m["content"] for m in messages if m["content"] in events_by_question]
        if asked is not None:
            asked.append(question)
        script = events_by_question[question]
        cut = bool(script) and script[-1] is STREAM_CUT
        events = "".join(f"data: {json.dumps(event)}\n\n" for event in script[: -1 if cut else None])
        return Response(events if cut else f"{events}data: [DONE]\n\n", media_type="text/event-stream")

    return upstream


def ask(client: httpx.Client, question: str, **body: Any) -> httpx.Response:
    return client.post(
        "/v1/chat/completions", json={**CHAT, "messages": [{"role": "user", "content": question}], **body}
    )


def test_a_stream_event_with_a_field_of_another_type_is_a_502_counted_once(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path, tracer_provider: TracerProvider
) -> None:
    """A finish reason, content or token count of another JSON type was passed on: a 500 (a response
    model refusing it, an answer that cannot be written), or read as something else (a fraction as its
    integer, "9" as 9). A finish reason no protocol has is passed on as sent, as vLLM passes on its own."""
    events = {question: [event] for question, (event, _) in MALFORMED_EVENTS.items()}
    events["a server's own finish reason"] = [chunk(finish_reason="eos_token")]
    with openai_service(
        service_loop,
        scripted_upstream(events),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        breaker_min_calls=1000,  # every request here fails: the engine breaker must not answer for them
    ) as (client, _):
        before = errors_counted(client)
        answers = {question: ask(client, question) for question in MALFORMED_EVENTS}
        counted = counted_since(before, client)
        passed_on = ask(client, "a server's own finish reason")
    for question, (_, says) in MALFORMED_EVENTS.items():
        answer = answers[question]
        assert answer.status_code == 502, (question, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "engine_bad_reply", (question, error)
        assert error["message"].startswith("the engine answered something that is not an OpenAI stream event")
        assert says in error["message"], (question, error["message"])
    assert counted == {"engine_reply": float(len(MALFORMED_EVENTS))}
    assert passed_on.status_code == 200, passed_on.text
    assert passed_on.json()["choices"][0]["finish_reason"] == "eos_token"


# What vLLM's OpenAI server sends when generation fails in a stream it has begun (a GenerationError, its
# finish reason "error"); any other exception there is sent as a "BadRequestError" of code 400
CUDA_FAILURE = "CUDA error: an illegal memory access was encountered. " * 40
UPSTREAM_FAILURES: dict[str, list[Any]] = {
    "cut after a token": [
        chunk(),
        {"error": {"message": CUDA_FAILURE, "type": "InternalServerError", "code": 500}},
    ],
    "failed before a token": [
        {"error": {"message": "EngineCore died", "type": "BadRequestError", "code": 400}}
    ],
    "older vLLM's error": [chunk(), {"object": "error", "message": "engine dead", "type": "x", "code": 500}],
    "closed mid-answer": [chunk(), STREAM_CUT],
}


def test_an_upstream_error_event_is_a_503_counted_once_and_never_cached(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """An upstream's error event (``{"error": {...}}``, no choices) was skipped: the answer cut there ended
    as a complete one (finish reason "stop"), counted a success and remembered in the answer caches, where
    an identical request found it. It is the engine failing the request: a 503 ``engine_error`` naming the
    upstream's error (said in the stream once a token went out), counted once, never cached (the upstream
    is asked again). So is a stream closed mid-answer, with neither a finish reason nor [DONE]; one that
    ends with [DONE] but no finish reason is a whole answer, as before."""
    asked: list[str] = []
    events = {
        **UPSTREAM_FAILURES,
        "whole": [chunk(), chunk(delta={"content": " take days."}, finish_reason="stop")],
        "ended without a finish reason": [chunk()],  # but with [DONE]: a server that never names one
    }
    with openai_service(
        service_loop,
        scripted_upstream(events, asked),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        cache_exact_enabled=True,
        breaker_min_calls=1000,  # these requests fail on purpose: the engine breaker must not answer for them
    ) as (client, _):
        greedy = {"temperature": 0}  # a request the answer caches keep
        whole = [
            ask(client, "whole", **greedy) for _ in range(2)
        ]  # the control: the cache answers the second
        before = errors_counted(client)
        cut = [ask(client, "cut after a token", **greedy) for _ in range(2)]
        before_a_token = ask(client, "failed before a token", **greedy)
        older = ask(client, "older vLLM's error", **greedy)
        closed = [ask(client, "closed mid-answer", **greedy) for _ in range(2)]
        no_finish_reason = ask(client, "ended without a finish reason", **greedy)
        streamed_body = {
            **greedy,
            "stream": True,
            "messages": [{"role": "user", "content": "cut after a token"}],
        }
        with client.stream("POST", "/v1/chat/completions", json={**CHAT, **streamed_body}) as streamed:
            assert streamed.status_code == 200  # the first token came before the error
            payloads = [line[len("data: ") :] for line in streamed.iter_lines() if line.startswith("data: ")]
        first_streamed = {**streamed_body, "messages": [{"role": "user", "content": "failed before a token"}]}
        with client.stream("POST", "/v1/chat/completions", json={**CHAT, **first_streamed}) as refused:
            refused.read()
        counted = counted_since(before, client)
    assert [answer.status_code for answer in whole] == [200, 200]
    assert whole[1].json()["evallens"]["cache"]["exact"]
    assert asked.count("whole") == 1
    for answer in [*cut, before_a_token, older, *closed, refused]:
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"]["code"] == "engine_error", answer.text
    assert "neither a finish reason nor [DONE]" in closed[0].json()["error"]["message"]
    assert asked.count("closed mid-answer") == 2
    assert no_finish_reason.status_code == 200, no_finish_reason.text
    assert no_finish_reason.json()["choices"][0]["finish_reason"] == "stop"
    message = cut[0].json()["error"]["message"]
    assert "CUDA error: an illegal memory access was encountered." in message
    assert '"InternalServerError"' in message and "500" in message
    assert len(message) < 500  # the upstream's message, cut short
    assert "EngineCore died" in before_a_token.json()["error"]["message"]  # before a token too
    assert "EngineCore died" in refused.json()["error"]["message"]
    # the span keeps the error
    recorded = [
        str(event.attributes["exception.message"])
        for span in span_exporter.get_finished_spans()
        for event in span.events
        if event.name == "exception" and event.attributes
    ]
    assert sum("EngineCore died" in message for message in recorded) == 2, recorded
    assert "engine dead" in older.json()["error"]["message"]
    assert asked.count("cut after a token") == 3  # never answered from the cache
    assert payloads[-1] == "[DONE]"
    error = json.loads(payloads[-2])["error"]
    assert error["code"] == "engine_error" and "CUDA error" in error["message"], error
    assert "Refunds" in payloads[0]
    assert all(json.loads(p)["choices"][0].get("finish_reason") is None for p in payloads[:-2])
    assert counted == {"engine": 8.0}


# Answers of an upstream that sends more than the one choice the service asks for (it never sends ``n``)
SEVERAL_CHOICES: dict[str, list[Any]] = {
    "two choices in one event": [
        {
            "choices": [
                chunk()["choices"][0],
                {**chunk()["choices"][0], "index": 1, "delta": {"content": " Exchanges"}},
            ]
        },
        chunk(delta={"content": " take days."}, finish_reason="stop"),
    ],
    "a second choice after a token": [
        chunk(),
        chunk(index=1, delta={"content": " Exchanges"}),
        chunk(delta={"content": " take days."}, finish_reason="stop"),
        chunk(index=1, delta={"content": " never"}, finish_reason="stop"),
    ],
    "only a choice of index 1": [chunk(index=1, delta={"content": " Exchanges"}, finish_reason="stop")],
    "a choice index as text": [chunk(index="0", finish_reason="stop")],
}


def test_an_upstream_reply_of_several_choices_is_a_502_never_merged_nor_cached(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path, tracer_provider: TracerProvider
) -> None:
    """The service asks for one choice; an upstream that answered several (in one event, or one choice an
    event as OpenAI streams ``n`` > 1) had their texts merged into one answer ("Refunds Exchanges take
    days."), counted a success and cached. It is a reply the protocol does not allow for this request: a
    502 ``engine_bad_reply`` (said in the stream once a token went out), never merged, never cached."""
    asked: list[str] = []
    with openai_service(
        service_loop,
        scripted_upstream(SEVERAL_CHOICES, asked),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        cache_exact_enabled=True,
        breaker_min_calls=1000,  # these requests fail on purpose: the engine breaker must not answer for them
    ) as (client, _):
        greedy = {"temperature": 0}  # a request the answer caches keep
        before = errors_counted(client)
        answers = {
            question: [ask(client, question, **greedy), ask(client, question, **greedy)]
            for question in SEVERAL_CHOICES
        }
        streamed_body = {
            **CHAT,
            **greedy,
            "stream": True,
            "messages": [{"role": "user", "content": "a second choice after a token"}],
        }
        with client.stream("POST", "/v1/chat/completions", json=streamed_body) as streamed:
            assert streamed.status_code == 200  # the first token came before the second choice
            payloads = [line[len("data: ") :] for line in streamed.iter_lines() if line.startswith("data: ")]
        first_event = [{"role": "user", "content": "two choices in one event"}]
        first_streamed = {**streamed_body, "messages": first_event}
        with client.stream("POST", "/v1/chat/completions", json=first_streamed) as refused:
            refused.read()
        counted = counted_since(before, client)
    for question, (first, second) in answers.items():
        for answer in (first, second):
            assert answer.status_code == 502, (question, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "engine_bad_reply", (question, error)
            assert error["message"].startswith("the engine answered something that is not an OpenAI stream")
    # never cached: each request asked the upstream (the two streamed ones too)
    assert Counter(asked) == Counter(dict.fromkeys(SEVERAL_CHOICES, 2)) + Counter(
        ["a second choice after a token", "two choices in one event"]
    )
    assert "2 choices" in answers["two choices in one event"][0].json()["error"]["message"]
    assert "choices[0].index is 1" in answers["only a choice of index 1"][0].json()["error"]["message"]
    assert 'choices[0].index is "0"' in answers["a choice index as text"][0].json()["error"]["message"]
    assert refused.status_code == 502, refused.text
    assert refused.json()["error"]["code"] == "engine_bad_reply"
    assert payloads[-1] == "[DONE]"
    assert json.loads(payloads[-2])["error"]["code"] == "engine_bad_reply"
    streamed_text = "".join(
        json.loads(p)["choices"][0]["delta"].get("content") or "" for p in payloads[:-2] if "choices" in p
    )
    assert streamed_text == "Refunds"  # the second choice's text never reached the client
    assert counted == {"engine_reply": float(2 * len(SEVERAL_CHOICES) + 2)}


# What an upstream's error may quote besides what failed: its API key, the URL it is reached at with a
# user and password, a bearer token, and the messages it was sent (the system prompt's note with them)
UPSTREAM_KEY = "sk-proj-Zq8vN3kL0pR5tW2yB7xC4mA9"
UPSTREAM_URL = "http://evallens:hunter2@10.0.0.7:8000/v1"
BEARER_TOKEN = "f3c9a1e07b6d4c2a9e8f1b3d5c7a9e0f2d4b6c8a"
STAFF_NOTE = "Staff discount code for the assistant only: ACME-STAFF-4471."
LEAKED = {
    "hunter2",
    UPSTREAM_KEY,
    "Zq8vN3kL0pR5",
    BEARER_TOKEN,
    "ACME-STAFF-4471",
    "Jane Roe",
    "Maple Street",
}


def leaky_upstream() -> FastAPI:
    """An OpenAI-compatible server that fails every request before a token, its error saying what failed
    and then quoting its key, URL and token and the messages it was sent: as a stream's error event, or
    as an HTTP error status (500: its fault, 400: it refuses the request) with an OpenAI error body."""
    upstream = FastAPI()

    @upstream.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": UPSTREAM_MODEL, "object": "model"}]}

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        messages = (await request.json())["messages"]
        question = messages[-1]["content"]
        failure = "refused" if question.endswith("(400)") else "EngineCore died"
        leaked = (
            f"{failure} (key {UPSTREAM_KEY} at {UPSTREAM_URL}, Authorization: Bearer {BEARER_TOKEN}) "
            f"serving {json.dumps(messages)}"
        )
        error = {"error": {"message": leaked, "type": "InternalServerError", "code": 500}}
        if question.endswith("(event)"):
            return Response(f"data: {json.dumps(error)}\n\ndata: [DONE]\n\n", media_type="text/event-stream")
        return JSONResponse(error, status_code=400 if question.endswith("(400)") else 500)

    return upstream


def test_an_engine_failure_before_a_token_says_what_failed_without_secrets_or_the_prompt(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """An upstream's failure before the first token was answered with the service's generic words ("The
    assistant is temporarily unavailable"), its message only on the span: neither a client nor an
    operator reading the reply could tell an engine's error from an outage. The reply is a 503
    ``engine_error`` saying what failed in the engine's words, cut short, with its credentials and any
    text of the prompt (the system prompt's and the client's) masked; a 400 the upstream answers is masked
    alike, and so are the engine's words once a token went out."""
    question = "My name is Jane Roe of 12 Maple Street: where is my parcel?"
    with openai_service(
        service_loop,
        leaky_upstream(),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        system_prompt=STAFF_NOTE,
        breaker_min_calls=1000,  # these requests fail on purpose: the engine breaker must not answer for them
    ) as (client, _):
        answers = {case: ask(client, f"{question} ({case})") for case in ("event", "500", "400")}
        streamed_body = {
            **CHAT,
            "stream": True,
            "messages": [{"role": "user", "content": f"{question} (event)"}],
        }
        with client.stream("POST", "/v1/chat/completions", json=streamed_body) as streamed:
            streamed.read()
    assert {case: answer.status_code for case, answer in answers.items()} == {
        "event": 503,
        "500": 503,
        "400": 400,
    }, {case: answer.text for case, answer in answers.items()}
    assert streamed.status_code == 503, streamed.text
    for answer in [*answers.values(), streamed]:
        error = answer.json()["error"]
        message = error["message"]
        assert "temporarily unavailable" not in message, message
        assert ("refused" if answer is answers["400"] else "EngineCore died") in message, message
        assert "InternalServerError" in message or answer is not answers["event"], message
        assert "[REDACTED]" in message and "[PROMPT]" in message, message
        assert not [leak for leak in LEAKED if leak in message], message
        assert len(message) <= 600, message
        if answer is not answers["400"]:
            assert error["code"] == "engine_error", error
    # the span keeps what the engine said, as before
    recorded = [
        str(event.attributes["exception.message"])
        for span in span_exporter.get_finished_spans()
        for event in span.events
        if event.name == "exception" and event.attributes
    ]
    assert any("EngineCore died" in message for message in recorded), recorded


def test_an_engine_server_gone_is_a_503_saying_it_could_not_be_reached(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path, tracer_provider: TracerProvider
) -> None:
    """The OpenAI engine's server went away after the service was ready: the connection error escaped the
    engine as no engine error, and the client was told the service's generic words."""
    with ExitStack() as upstream_serving:
        upstream = upstream_serving.enter_context(serving(service_loop, scripted_upstream({})))
        engine = OpenAIEngine(OpenAIOptions(base_url=f"{upstream}/v1", model=UPSTREAM_MODEL))
        settings = make_settings(service_data_dir, tiny_model_path, engine="openai", retrieval_enabled=False)
        app = create_app(settings, engine=engine, tracer_provider=tracer_provider)
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
            upstream_serving.close()  # the engine's server goes away
            answer = client.post("/v1/chat/completions", json=CHAT)
        service_loop.run(engine.close())
    assert answer.status_code == 503, answer.text
    error = answer.json()["error"]
    assert error["code"] == "engine_error", error
    assert "could not be reached" in error["message"] and "ConnectError" in error["message"], error
    assert "temporarily unavailable" not in error["message"]


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
