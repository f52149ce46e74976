"""The real OpenTelemetry SDK exports over HTTP/protobuf and gRPC; spans land with GenAI fields and cost."""

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

from collector.runtime import Collector
from evallens.telemetry import attributes as names
from tests.collector.conftest import fetch_spans


def send_generation(exporter: SpanExporter, model_attribute: str, token_names: tuple[str, str]) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "chat-svc", names.TENANT: "acme"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.sdk", "1.2.3")
    with tracer.start_as_current_span("request"), tracer.start_as_current_span("chat gpt-4o-mini") as span:
        span.set_attribute(model_attribute, "gpt-4o-mini-2024-07-18")
        span.set_attribute(token_names[0], 1000)
        span.set_attribute(token_names[1], 500)
        span.set_attribute(names.USER, "u-1")
        span.set_attribute(names.FEATURE, "support-chat")
        span.set_attribute(names.EVAL_RUN_ID, "run-7")
        span.set_attribute(names.EVAL_CASE_ID, "case-3")
        span.add_event("first-token", {"n": 1})
    provider.shutdown()


def check_stored(database_url: str) -> None:
    rows = {row["name"]: row for row in fetch_spans(database_url)}
    assert set(rows) == {"request", "chat gpt-4o-mini"}
    generation, parent = rows["chat gpt-4o-mini"], rows["request"]
    assert generation["parent_span_id"] == parent["span_id"] and parent["parent_span_id"] is None
    assert generation["trace_id"] == parent["trace_id"]
    assert generation["model"] == "gpt-4o-mini-2024-07-18"
    assert (generation["input_tokens"], generation["output_tokens"]) == (1000, 500)
    # default price of gpt-4o-mini: $0.15 / $0.60 per 1M tokens (matched by prefix)
    assert generation["cost_usd"] == pytest.approx((1000 * 0.15 + 500 * 0.6) / 1e6)
    assert parent["cost_usd"] is None and parent["model"] is None
    assert (generation["tenant"], generation["user_id"], generation["feature"]) == (
        "acme",
        "u-1",
        "support-chat",
    )
    assert (generation["eval_run_id"], generation["eval_case_id"]) == ("run-7", "case-3")
    assert generation["service_name"] == "chat-svc"
    assert (generation["scope_name"], generation["scope_version"]) == ("tests.sdk", "1.2.3")
    assert generation["resource"]["service.name"] == "chat-svc"
    assert generation["attributes"][names.USER] == "u-1"
    assert generation["events"][0]["name"] == "first-token" and generation["events"][0]["attributes"] == {
        "n": 1
    }
    assert generation["end_time"] >= generation["start_time"] and generation["duration_ms"] >= 0
    assert generation["project"] == "default"


def test_http_protobuf_exporter(running_collector: Collector, database_url: str) -> None:
    exporter = HttpExporter(endpoint=f"http://127.0.0.1:{running_collector.http_port}/v1/traces")
    send_generation(
        exporter,
        names.GEN_AI_RESPONSE_MODEL,
        (names.GEN_AI_USAGE_INPUT_TOKENS, names.GEN_AI_USAGE_OUTPUT_TOKENS),
    )
    check_stored(database_url)


def test_grpc_exporter_with_deprecated_token_names(running_collector: Collector, database_url: str) -> None:
    exporter = GrpcExporter(endpoint=f"127.0.0.1:{running_collector.grpc_port}", insecure=True)
    send_generation(
        exporter,
        names.GEN_AI_REQUEST_MODEL,
        (names.GEN_AI_USAGE_PROMPT_TOKENS, names.GEN_AI_USAGE_COMPLETION_TOKENS),
    )
    check_stored(database_url)


def test_openinference_names(running_collector: Collector, database_url: str) -> None:
    exporter = HttpExporter(endpoint=f"http://127.0.0.1:{running_collector.http_port}/v1/traces")
    send_generation(
        exporter, names.LLM_MODEL_NAME, (names.LLM_TOKEN_COUNT_PROMPT, names.LLM_TOKEN_COUNT_COMPLETION)
    )
    check_stored(database_url)
