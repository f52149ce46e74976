"""The ``openai`` client instrumented by the two real third-party instrumentations, exporting through the
real OpenTelemetry SDK to the real collector: cost from the price table, tokens, the question, mining.

The model is a small local HTTP server answering the chat-completions JSON shape: the one part that is
not what a user runs (starting vLLM here would cost minutes for nothing these tests check). It answers
a refusal, which makes every trace a mining candidate, and names the model as clients often do
(lower case), which the price table must still match.
"""

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest
from openinference.instrumentation.openai import OpenAIInstrumentor as OpenInferenceInstrumentor
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as GenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from collector.runtime import Collector
from evallens.settings import child_environment
from evallens.telemetry.messages import question_from_attribute
from tests.collector.conftest import fetch_spans

REFUSAL = "Sorry, I cannot help with that."
SERVED_MODEL = "smollm2-135m-instruct"  # the price table has SmolLM2-135M-Instruct at $0.50 per GPU-hour
GPU_HOUR_USD = 0.5
INPUT_TOKENS, OUTPUT_TOKENS = 12, 3


class ChatCompletions(BaseHTTPRequestHandler):
    """Answers ``POST /v1/chat/completions`` with a refusal and usage, as an OpenAI-compatible server."""

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": request["model"].lower(),
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": REFUSAL}}
            ],
            "usage": {
                "prompt_tokens": INPUT_TOKENS,
                "completion_tokens": OUTPUT_TOKENS,
                "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
            },
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def model_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


@contextmanager
def instrumented(
    instrumentor: Any, span_exporter: SpanExporter, log_exporter: LogRecordExporter | None
) -> Iterator[None]:
    """``instrumentor`` on the ``openai`` client, exporting spans (and log events) over OTLP."""
    resource = Resource.create({"service.name": "third-party-chat"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    logger_provider = LoggerProvider(resource=resource)
    if log_exporter is not None:
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        logger_provider.shutdown()


def ask(model_url: str, question: str) -> None:
    client = openai.OpenAI(base_url=model_url, api_key="unused", max_retries=0)
    messages: Any = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}]
    client.chat.completions.create(model="SmolLM2-135M-Instruct", messages=messages)
    client.close()


def http(collector: Collector, signal: str) -> str:
    return f"http://127.0.0.1:{collector.http_port}/v1/{signal}"


def grpc_endpoint(collector: Collector) -> str:
    return f"127.0.0.1:{collector.grpc_port}"


# (instrumentation, content capture setting, span exporter, log exporter, question)
Client = tuple[Callable[[], Any], str | None, Callable[[Collector], Any], Callable[[Collector], Any] | None]
CLIENTS: dict[str, tuple[Client, str]] = {
    "openai-v2 events over OTLP/HTTP logs": (
        (
            GenAIInstrumentor,
            "event_only",
            lambda c: HttpSpanExporter(endpoint=http(c, "traces")),
            lambda c: HttpLogExporter(endpoint=http(c, "logs")),
        ),
        "Which ports does the firewall block by default?",
    ),
    "openai-v2 events over OTLP/gRPC logs": (
        (
            GenAIInstrumentor,
            "event_only",
            lambda c: GrpcSpanExporter(endpoint=grpc_endpoint(c), insecure=True),
            lambda c: GrpcLogExporter(endpoint=grpc_endpoint(c), insecure=True),
        ),
        "How long is the warranty on refurbished laptops?",
    ),
    "openai-v2 content on the span": (
        (GenAIInstrumentor, "span_only", lambda c: HttpSpanExporter(endpoint=http(c, "traces")), None),
        "Can I export my invoices as CSV files?",
    ),
    "openinference": (
        (OpenInferenceInstrumentor, None, lambda c: HttpSpanExporter(endpoint=http(c, "traces")), None),
        "What is the capital of the moon colony?",
    ),
}


def test_third_party_instrumentations_get_cost_tokens_questions_and_mining(
    running_collector: Collector, database_url: str, model_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the GenAI instrumentation's switches, as its users set them
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    for (make_instrumentor, capture, span_exporter, log_exporter), question in CLIENTS.values():
        if capture is not None:
            monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture)
        logs = log_exporter(running_collector) if log_exporter is not None else None
        with instrumented(make_instrumentor(), span_exporter(running_collector), logs):
            ask(model_url, question)

    spans = fetch_spans(database_url)
    assert len(spans) == len(CLIENTS)
    for span in spans:
        assert span["model"] == SERVED_MODEL
        assert (span["input_tokens"], span["output_tokens"]) == (INPUT_TOKENS, OUTPUT_TOKENS)
        # matched to SmolLM2-135M-Instruct in any case; a client span's duration stands in for GPU time
        expected = GPU_HOUR_USD * float(span["duration_ms"]) / 1000 / 3600
        assert span["cost_usd"] == pytest.approx(expected, rel=1e-3, abs=1e-12)
        assert span["cost_usd"] > 0
    on_spans = {question_from_attribute(span["attributes"].get("gen_ai.input.messages")) for span in spans}
    on_spans |= {question_from_attribute(span["attributes"].get("input.value")) for span in spans}
    questions = [question for _, question in CLIENTS.values()]
    # with event_only the question travels only as a log event, never on the span
    assert on_spans - {None} == set(questions[2:])

    mined = subprocess.run(
        [sys.executable, "-m", "evallens", "cases", "mine", "--since", "1h", "--json"],
        env=child_environment({"EVALLENS_DATABASE_URL": database_url, "HF_HUB_OFFLINE": "1"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert mined.returncode == 0, mined.stderr
    candidates = json.loads(mined.stdout)["candidates"]
    assert len(candidates) == len(questions)
    assert {candidate["question"] for candidate in candidates} == set(questions)
    assert all(candidate["answer"] == REFUSAL for candidate in candidates)
    assert {candidate["trace_id"] for candidate in candidates} == {span["trace_id"] for span in spans}
