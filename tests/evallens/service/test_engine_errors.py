"""Whose fault an engine's error is, as the client is told and the engine breaker counts it: an
OpenAI-compatible upstream's error statuses (a real server on a local socket).

Only a refusal of the request itself (a 400, 413 or 422 from the upstream) is the client's: a 400 in the
engine's words, never counted against the breaker. Anything else is the engine's or the service's: a 503
that says what failed, counted."""

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from opentelemetry.sdk.trace import TracerProvider

from tests.evallens.service.conftest import (
    LoopThread,
    counted_since,
    errors_counted,
)
from tests.evallens.service.test_internal_errors import UPSTREAM_MODEL, chunk, openai_service

pytestmark = pytest.mark.slow

CHAT = {"messages": [{"role": "user", "content": "How long do card refunds take?"}], "max_tokens": 4}
# what the breaker is set to in these tests: two failures in a row open it, for longer than a test runs
BREAKER: dict[str, Any] = {"breaker_min_calls": 2, "breaker_error_rate": 0.5, "breaker_open_s": 600.0}
UPSTREAM_KEY = "sk-proj-Zq8vN3kL0pR5tW2yB7xC4mA9"

# An upstream's error statuses, as OpenAI's API and vLLM's server answer them, by the question that gets it:
# its status, headers and error body
UPSTREAM_STATUSES: dict[str, tuple[int, dict[str, str], str]] = {
    "wrong key": (401, {}, f"Incorrect API key provided: {UPSTREAM_KEY}."),
    "key without access": (403, {}, "You are not allowed to use this model."),
    "rate limited": (429, {"Retry-After": "7"}, "Rate limit reached for requests per minute."),
    "rate limited, no retry-after": (429, {}, "Rate limit reached for requests per minute."),
    "rate limited, a date in the past": (
        429,
        {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
        "Rate limit reached.",
    ),
    "rate limited, no number": (429, {"Retry-After": "soon"}, "Rate limit reached."),
    "unknown model": (404, {}, f"The model `{UPSTREAM_MODEL}` does not exist."),
    "bad request": (400, {}, "This model's maximum context length is 8192 tokens."),
    "unprocessable": (422, {}, "messages: field required"),
    "too large": (413, {}, "The request body is too large for this server."),
}


def status_upstream() -> FastAPI:
    """An OpenAI-compatible server answering each question of ``UPSTREAM_STATUSES`` with its error status,
    and any other with one whole answer."""
    upstream = FastAPI()

    @upstream.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": UPSTREAM_MODEL, "object": "model"}]}

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        question = (await request.json())["messages"][-1]["content"]
        if question not in UPSTREAM_STATUSES:
            events = [chunk(finish_reason="stop")]
            body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
            return Response(body, media_type="text/event-stream")
        status, headers, message = UPSTREAM_STATUSES[question]
        error = {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        return JSONResponse(error, status_code=status, headers=headers)

    return upstream


def ask(client: httpx.Client, question: str, **body: Any) -> httpx.Response:
    return client.post(
        "/v1/chat/completions", json={**CHAT, "messages": [{"role": "user", "content": question}], **body}
    )


def test_an_upstream_status_is_the_clients_fault_only_when_it_refuses_the_request(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path, tracer_provider: TracerProvider
) -> None:
    """Every 4xx of the upstream was the client's 400: a wrong API key in the service's own settings, or
    the upstream's rate limit, read as a bad request. Only a 400 or 422 is: a 401 or 403 is the engine
    refusing the service's credentials, a 404 the service asking for a model the upstream does not have,
    a 429 the engine at capacity (with the upstream's Retry-After, in seconds, when it gave one): 503s."""
    with openai_service(
        service_loop,
        status_upstream(),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        breaker_min_calls=1000,  # these requests fail on purpose: the engine breaker must not answer for them
    ) as (client, _):
        before = errors_counted(client)
        answers = {question: ask(client, question) for question in UPSTREAM_STATUSES}
        streamed_body = {**CHAT, "stream": True, "messages": [{"role": "user", "content": "rate limited"}]}
        with client.stream("POST", "/v1/chat/completions", json=streamed_body) as streamed:
            streamed.read()
        counted = counted_since(before, client)
    statuses = {question: answer.status_code for question, answer in answers.items()}
    refused = {"bad request", "unprocessable", "too large"}
    assert statuses == {question: 400 if question in refused else 503 for question in UPSTREAM_STATUSES}, {
        question: answer.text for question, answer in answers.items()
    }
    errors = {question: answer.json()["error"] for question, answer in answers.items()}
    for question in ("wrong key", "key without access"):
        assert errors[question]["code"] == "engine_error", errors[question]
        assert "refused the service's credentials" in errors[question]["message"], errors[question]
        assert "EVALLENS_OPENAI_API_KEY" in errors[question]["message"], errors[question]
    assert UPSTREAM_KEY not in errors["wrong key"]["message"]
    assert "[REDACTED]" in errors["wrong key"]["message"]
    assert "not allowed to use this model" in errors["key without access"]["message"]
    assert errors["unknown model"]["code"] == "engine_error"
    assert "404" in errors["unknown model"]["message"]
    for question in [question for question in UPSTREAM_STATUSES if question.startswith("rate limited")]:
        assert errors[question]["code"] == "engine_overloaded", errors[question]
        assert "Rate limit reached" in errors[question]["message"], errors[question]
    assert answers["rate limited"].headers["retry-after"] == "7"
    assert streamed.status_code == 503 and streamed.headers["retry-after"] == "7"
    assert answers["rate limited, a date in the past"].headers["retry-after"] == "0"
    assert "retry-after" not in answers["rate limited, no retry-after"].headers
    assert "retry-after" not in answers["rate limited, no number"].headers
    assert "maximum context length" in errors["bad request"]["message"]
    assert "field required" in errors["unprocessable"]["message"]
    assert "too large for this server" in errors["too large"]["message"]
    assert {errors[question]["type"] for question in refused} == {"invalid_request_error"}
    assert counted == {"engine": len(UPSTREAM_STATUSES) - len(refused) + 1, "invalid_request": len(refused)}


@pytest.mark.parametrize("failure", ["wrong key", "key without access", "rate limited"])
def test_an_upstream_refusing_the_service_counts_against_the_engine_breaker(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    failure: str,
) -> None:
    """An upstream 401, 403 or 429 never reached the breaker (read as the client's fault): an engine that
    refuses every request the service sends kept being asked. Counted, two open the breaker (the 400 of a
    request the upstream refuses still never counts: ``test_hostile``)."""
    with openai_service(
        service_loop, status_upstream(), service_data_dir, tiny_model_path, tracer_provider, **BREAKER
    ) as (client, _):
        failed = [ask(client, failure) for _ in range(2)]
        shut_out = ask(client, "a question the upstream answers")
    assert [answer.status_code for answer in failed] == [503, 503], [answer.text for answer in failed]
    assert shut_out.status_code == 503, shut_out.text
    assert shut_out.json()["error"]["code"] == "engine_breaker_open"
