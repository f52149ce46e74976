"""Spans, metrics and routing of the service on the real vLLM engine."""

from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from evallens.service import create_app
from evallens.service.engines import EngineRouter, OpenAIEngine, OpenAIOptions, VllmEngine, create_router
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics
from tests.evallens.service.conftest import make_settings, serving, wait_until, warmed_up
from tests.evallens.service.test_chat_vllm import chat, metric_value

pytestmark = pytest.mark.slow

TAGS = {
    attr.HEADER_TENANT: "acme",
    attr.HEADER_USER: "u-1",
    attr.HEADER_FEATURE: "support-bot",
    attr.HEADER_EVAL_RUN_ID: "run-42",
    attr.HEADER_EVAL_CASE_ID: "case-7",
}


def test_request_span_carries_genai_and_evallens_attributes(serve, span_exporter) -> None:
    with serve(hour_usd=3.6) as client:
        body = chat(max_tokens=6, ignore_eos=True, temperature=0.5, top_p=0.9, seed=3)
        answer = client.post("/v1/chat/completions", json=body, headers=TAGS).json()
    spans = {span.name: span for span in span_exporter.get_finished_spans()}
    root = spans["chat tiny-llama"]
    assert root.attributes is not None
    expected: dict[str, Any] = {
        attr.GEN_AI_OPERATION_NAME: "chat",
        attr.GEN_AI_PROVIDER_NAME: "vllm",
        attr.GEN_AI_REQUEST_MODEL: "tiny-llama",
        attr.GEN_AI_REQUEST_TEMPERATURE: 0.5,
        attr.GEN_AI_REQUEST_TOP_P: 0.9,
        attr.GEN_AI_REQUEST_MAX_TOKENS: 6,
        attr.GEN_AI_USAGE_INPUT_TOKENS: answer["usage"]["prompt_tokens"],
        attr.GEN_AI_USAGE_OUTPUT_TOKENS: 6,
        attr.GEN_AI_RESPONSE_FINISH_REASONS: ("length",),
        attr.TENANT: "acme",
        attr.USER: "u-1",
        attr.FEATURE: "support-bot",
        attr.EVAL_RUN_ID: "run-42",
        attr.EVAL_CASE_ID: "case-7",
        attr.ROUTE: "main",
        attr.CONFIG_FINGERPRINT: answer["evallens"]["config_fingerprint"],
    }
    assert {name: root.attributes.get(name) for name in expected} == expected
    assert 0 < root.attributes[attr.TIME_TO_FIRST_TOKEN_S] <= root.attributes[attr.ENGINE_TIME_S] + 1
    assert root.attributes[attr.COST_USD] > 0  # 3.6 USD/h: one millisecond of engine time costs 1e-6
    assert len(str(root.attributes[attr.PROMPT_HASH])) == 64
    assert format(root.context.trace_id, "032x") == answer["evallens"]["trace_id"]
    for child in ("queue", "generate"):
        assert spans[child].parent is not None
        assert spans[child].parent.span_id == root.context.span_id


def test_metrics_expose_service_and_vllm_series(serve) -> None:
    shared_prefix = "You are reading the evallens manual. " * 8
    with serve() as client:
        for question in ("What is a span?", "What is a trace?"):
            client.post("/v1/chat/completions", json=chat(shared_prefix + question, max_tokens=2))
        exposition = client.get("/metrics").text
    for name in (
        metrics.VLLM_KV_CACHE_USAGE,
        metrics.VLLM_PREFIX_CACHE_QUERIES,
        metrics.VLLM_PREFIX_CACHE_HITS,
        metrics.VLLM_NUM_REQUESTS_RUNNING,
        metrics.VLLM_NUM_REQUESTS_WAITING,
    ):
        assert f"\n{name}{{" in exposition, name
    assert metric_value(exposition, metrics.VLLM_PREFIX_CACHE_HITS) > 0  # the shared prefix was reused
    assert metric_value(exposition, metrics.REQUESTS + "_total") == 2
    assert metric_value(exposition, metrics.TOKENS + "_total") > 0
    assert f"\n{metrics.REQUEST_LATENCY_SECONDS}_bucket{{" in exposition
    assert f"\n{metrics.TIME_TO_FIRST_TOKEN_SECONDS}_bucket{{" in exposition


def test_routing_sends_short_prompts_to_the_small_engine(
    service_loop, vllm_engine: VllmEngine, service_data_dir, tiny_model_path, tracer_provider, span_exporter
) -> None:
    settings = make_settings(service_data_dir, tiny_model_path, system_prompt="Be brief.")
    router = EngineRouter(vllm_engine, vllm_engine, small_max_prompt_chars=30)
    app = create_app(settings, engine=router, tracer_provider=tracer_provider)
    with serving(service_loop, app) as url:
        import httpx

        with httpx.Client(base_url=url, timeout=120) as client:
            short = client.post("/v1/chat/completions", json=chat("hi", max_tokens=2)).json()
            long = client.post("/v1/chat/completions", json=chat("tell me " * 10, max_tokens=2)).json()
    assert (short["evallens"]["route"], long["evallens"]["route"]) == ("small", "main")
    routes = [
        span.attributes.get(attr.ROUTE) for span in span_exporter.get_finished_spans() if span.attributes
    ]
    assert "small" in routes and "main" in routes


def vllm_series(exposition: str) -> dict[tuple[str, str], float]:
    """vLLM's samples in a Prometheus page, by sample name and the served model they are labelled with."""
    return {
        (sample.name, sample.labels.get("model_name", "")): sample.value
        for family in text_string_to_metric_families(exposition)
        if family.name.startswith("vllm:")
        for sample in family.samples
    }


def test_a_small_route_engine_leaves_the_main_engines_vllm_metrics_exported(
    service_loop, vllm_engine: VllmEngine, service_data_dir, tiny_model_path, tracer_provider, tmp_path: Path
) -> None:
    """With EVALLENS_ROUTE_SMALL_MODEL_PATH the service runs a second vLLM engine in its process. vLLM's
    Prometheus logger, made as an engine starts, unregisters every ``vllm:*`` metric already registered:
    the small engine, started after the main one, took the main engine's KV-cache, queue and TTFT series
    off ``/metrics`` (and so off the collector's scrapes and the dashboard's Serving page)."""
    small_path = tmp_path / "tiny-small"  # the tiny model under a name of its own
    small_path.symlink_to(tiny_model_path, target_is_directory=True)
    settings = make_settings(
        service_data_dir,
        tiny_model_path,
        system_prompt="Be brief.",
        route_small_model_path=small_path,
        route_max_prompt_chars=30,
    )
    router = create_router(settings, vllm_engine)  # as the service builds it: the small engine not started
    assert router.small is not None
    app = create_app(settings, engine=router, tracer_provider=tracer_provider)
    main_ttft = (metrics.VLLM_TIME_TO_FIRST_TOKEN + "_count", vllm_engine.model_name)
    try:
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert wait_until(lambda: warmed_up(client), timeout_s=300)
            assert client.get("/readyz").status_code == 200  # the small engine started beside the main one
            before = vllm_series(client.get("/metrics").text)
            short = client.post("/v1/chat/completions", json=chat("hi", max_tokens=2))
            long = client.post("/v1/chat/completions", json=chat("tell me " * 10, max_tokens=2))
            after = vllm_series(client.get("/metrics").text)
    finally:
        service_loop.run(router.small.close())
    assert short.status_code == 200 and short.json()["evallens"]["route"] == "small", short.text
    assert short.json()["usage"]["completion_tokens"] == 2
    assert long.status_code == 200 and long.json()["evallens"]["route"] == "main", long.text
    for name in (
        metrics.VLLM_KV_CACHE_USAGE,
        metrics.VLLM_PREFIX_CACHE_QUERIES,
        metrics.VLLM_NUM_REQUESTS_RUNNING,
        metrics.VLLM_NUM_REQUESTS_WAITING,
        metrics.VLLM_NUM_PREEMPTIONS,
        metrics.VLLM_TIME_TO_FIRST_TOKEN + "_count",
        metrics.VLLM_REQUEST_QUEUE_TIME + "_count",
    ):
        assert (name, vllm_engine.model_name) in after, (name, sorted(after))
    assert after[main_ttft] == before[main_ttft] + 1  # live: the main engine's request after the start
    # the small engine's own series are not exported (the setting says so)
    assert not [series for series in after if series[1] == router.small.model_name], sorted(after)


def test_openai_engine_against_an_openai_compatible_server(
    service_loop, serve, service_data_dir, tiny_model_path, tracer_provider
) -> None:
    """The `openai` engine, pointed at a running OpenAI-compatible server (here: the service itself)."""
    import httpx

    with serve() as upstream:
        base_url = str(upstream.base_url) + "/v1"
        settings = make_settings(service_data_dir, tiny_model_path, engine="openai")
        engine = OpenAIEngine(OpenAIOptions(base_url=base_url, model="tiny-llama"))
        app = create_app(settings, engine=engine, tracer_provider=tracer_provider)
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            # ready once the warm-up (engine start, embedder, indexes) is done: poll, as a client would
            assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
            answer = client.post("/v1/chat/completions", json=chat(max_tokens=5, ignore_eos=True)).json()
            config = client.get("/v1/config").json()
        service_loop.run(engine.close())
    assert answer["usage"]["completion_tokens"] == 5
    assert answer["usage"]["prompt_tokens"] > 0
    assert config["answer_config"]["engines"]["main"] == {
        "provider": "openai",
        "model": "tiny-llama",
        "base_url": base_url,
    }
