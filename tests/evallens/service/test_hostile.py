"""The chat API against a hostile client, on the real stack (vLLM tiny model): a request the service
cannot serve as sent is a 400 that names the field, costs nobody else anything, and the service keeps
answering."""

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from evallens.auth import Scope, create_key
from evallens.db.engine import sqlalchemy_url
from evallens.service import create_app
from evallens.service.chat.protocol import MAX_STOP_SEQUENCES
from evallens.service.engines import OpenAIEngine, OpenAIOptions
from evallens.settings.collector import DEFAULT_MAX_KEY_CHARS
from evallens.telemetry import attributes as attr
from tests.evallens.service.conftest import (
    TEST_MAX_MODEL_LEN,
    make_settings,
    serving,
    span_attributes,
    wait_until,
)

pytestmark = pytest.mark.slow

QUESTION = "How long do card refunds take?"


def chat_body(content: str | list[dict[str, Any]] = QUESTION, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "max_tokens": 2, "temperature": 0, **fields}


def post_json(client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    """POST ``body`` as JSON text, escapes included (``\\ud800`` reaches the server as JSON sends it)."""
    return client.post(
        "/v1/chat/completions", content=json.dumps(body), headers={"content-type": "application/json"}
    )


def assert_invalid(response: httpx.Response, param: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"].startswith(param), error


@pytest.mark.parametrize("seed", [2**80, 2**64, -(2**63) - 1])
def test_a_seed_out_of_range_is_400_and_never_opens_the_engine_breaker(serve, seed: int) -> None:
    """A seed vLLM cannot take used to fail inside the engine: a 503 that counted against the engine's
    breaker, so a few such requests from one client opened it and every other client got 503."""
    breaker = {"breaker_min_calls": 2, "breaker_error_rate": 0.5, "breaker_open_s": 600.0}
    with serve(**breaker) as client:
        refused = [post_json(client, chat_body(seed=seed)) for _ in range(3)]
        answered = post_json(client, chat_body(seed=2**63 - 1))
    assert [response.status_code for response in refused + [answered]] == [400, 400, 400, 200], answered.text
    for response in refused:
        assert_invalid(response, "seed")
    assert answered.json()["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"stop": ["ok", ""]}, "stop"),
        ({"stop": ""}, "stop"),
        ({"min_tokens": 3}, "min_tokens"),
        ({"min_tokens": 10_000, "max_tokens": None}, "min_tokens"),  # over the default max_tokens
    ],
    ids=["empty-stop-in-a-list", "empty-stop", "min-tokens-over-max-tokens", "min-tokens-over-the-default"],
)
def test_sampling_vllm_refuses_is_400_and_never_opens_the_engine_breaker(
    serve, fields: dict[str, Any], param: str
) -> None:
    """An empty stop string, or ``min_tokens`` over ``max_tokens``, passed every check at the edge and
    failed inside the engine, where vLLM refuses such sampling parameters: a 503 that counted against
    the engine's breaker, so one client opened it and every other client got 503."""
    breaker = {"breaker_min_calls": 2, "breaker_error_rate": 0.5, "breaker_open_s": 600.0}
    with serve(**breaker) as client:
        refused = [post_json(client, chat_body(**fields)) for _ in range(3)]
        answered = post_json(client, chat_body())
    assert [response.status_code for response in refused + [answered]] == [400, 400, 400, 200], [
        response.text for response in refused + [answered]
    ]
    for response in refused:
        assert_invalid(response, param)


def test_a_request_the_openai_server_refuses_is_400_and_never_opens_the_engine_breaker(
    service_loop, serve, service_data_dir, tiny_model_path, tracer_provider
) -> None:
    """Behind the `openai` engine only the server knows its context window: a request over it was a 400
    from the server that the engine's breaker counted as the engine failing, so the client got a 503,
    and three such requests opened the breaker for every other client."""
    breaker = {"breaker_min_calls": 2, "breaker_error_rate": 0.5, "breaker_open_s": 600.0}
    over_the_window = chat_body(max_tokens=TEST_MAX_MODEL_LEN + 1)
    with serve() as upstream:
        engine = OpenAIEngine(OpenAIOptions(base_url=f"{upstream.base_url}/v1", model="tiny-llama"))
        settings = make_settings(service_data_dir, tiny_model_path, engine="openai", **breaker)
        app = create_app(settings, engine=engine, tracer_provider=tracer_provider)
        with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
            assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
            refused = [post_json(client, over_the_window) for _ in range(3)]
            answered = post_json(client, chat_body())
        service_loop.run(engine.close())
    assert [response.status_code for response in refused + [answered]] == [400, 400, 400, 200], [
        response.text for response in refused + [answered]
    ]
    for response in refused:
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and "maximum context length" in error["message"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_lone_surrogate_in_a_message_is_400(serve, stream: bool) -> None:
    """JSON's ``\\ud800`` decodes to a lone surrogate, which the tokenizer refused with a TypeError: a 500."""
    with serve() as client:
        refused = post_json(client, chat_body(f"refunds \ud800 {QUESTION}", stream=stream))
        assert_invalid(refused, "messages.0.content")
        assert "lone surrogate" in refused.json()["error"]["message"]
        stop = post_json(client, chat_body(stop=["ok", "\udfff"], stream=stream))
        assert_invalid(stop, "stop")
        assert post_json(client, chat_body(stream=stream)).status_code == 200


def test_one_project_cannot_rate_another_projects_answer(serve, database_url: str, span_exporter) -> None:
    """With auth, project B's key could attach feedback to project A's answer (by its response id or
    trace id): a feedback span that case mining counts against A's trace."""
    engine = create_engine(sqlalchemy_url(database_url))
    with Session(engine) as session, session.begin():
        shop_a = {"x-evallens-key": create_key(session, "shop-a", Scope.INGEST).key}
        shop_b = {"x-evallens-key": create_key(session, "shop-b", Scope.INGEST).key}
    engine.dispose()
    with serve(database_url=database_url, auth_enabled=True, retrieval_enabled=False) as client:
        answered = client.post("/v1/chat/completions", json=chat_body(), headers=shop_a)
        assert answered.status_code == 200, answered.text
        response_id, trace_id = answered.json()["id"], answered.headers["x-trace-id"]
        by_response = {"response_id": response_id, "thumbs": "down"}
        by_trace = {"trace_id": trace_id, "thumbs": "down"}
        targets = (by_response, by_trace)
        refused = [client.post("/v1/feedback", json=body, headers=shop_b) for body in targets]
        assert [response.status_code for response in refused] == [404, 404], [r.text for r in refused]
        accepted = [client.post("/v1/feedback", json=body, headers=shop_a) for body in targets]
        assert [response.status_code for response in accepted] == [202, 202]
    feedback = [span for span in span_exporter.get_finished_spans() if span.name == attr.SPAN_FEEDBACK]
    assert [dict(span.attributes or {})[attr.TENANT] for span in feedback] == ["shop-a", "shop-a"]


@pytest.mark.parametrize(
    ("body", "content_type", "words"),
    [
        (b"[1, 2]", "application/json", "must be a JSON object, not an array"),
        (b'"refunds"', "application/json", "must be a JSON object, not a string"),
        (b"", "application/json", "body is missing"),
        (b"null", "application/json", "body is missing"),
        (b'{"messages": [', "application/json", "not valid JSON"),
        (json.dumps(chat_body()).encode(), "text/plain", "Content-Type: application/json"),
        (json.dumps(chat_body("café"), ensure_ascii=False).encode("latin-1"), "application/json", "UTF-8"),
        (b'{"max_tokens": 1' + b"0" * 5000 + b"}", "application/json", "integer of more than 4300 digits"),
    ],
    ids=["array", "string", "empty", "null", "cut-json", "text-plain", "latin-1", "huge-integer"],
)
def test_a_body_wrong_as_a_whole_is_400_saying_what_is_wrong(
    serve, body: bytes, content_type: str, words: str
) -> None:
    """A body that is not a JSON object was refused as 'None: Input should be a valid dictionary or
    object to extract fields from' (an empty one 'None: Field required', cut JSON '14: JSON decode
    error' with param '14'): no field is at fault, and the message named none a client could act on.
    A body that is not UTF-8, or holds an integer longer than Python reads, was only 'There was an
    error parsing the body'."""
    with serve() as client:
        refused = client.post("/v1/chat/completions", content=body, headers={"content-type": content_type})
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["type"] == "invalid_request_error" and error["param"] is None, error
        assert words in error["message"] and "None" not in error["message"], error
        assert post_json(client, chat_body()).status_code == 200


def test_a_content_part_whose_type_is_an_object_or_an_array_is_400(serve) -> None:
    """A content part whose ``type`` was an object or an array failed the check for parts the service
    cannot read with a TypeError (such a value cannot be put in a set): a 500 with a traceback."""
    with serve() as client:
        for part_type in ({"name": "text"}, ["text"]):
            refused = post_json(client, chat_body([{"type": part_type, "text": QUESTION}]))
            assert_invalid(refused, "messages.0.content")
            assert "content part 0.type" in refused.json()["error"]["message"], refused.text
        answered = post_json(client, chat_body([{"type": "text", "text": QUESTION}]))
        assert answered.status_code == 200, answered.text


def test_a_feedback_score_of_the_wrong_json_type_is_400_not_guessed(serve, span_exporter) -> None:
    """Lax parsing guessed: "score": true was recorded as a rating of 1, "score": "0.5" as 0.5. A client
    that sends either has a bug it should hear about, not a rating recorded in its user's name."""
    trace_id = "0" * 32
    with serve() as client:
        refused = [
            client.post("/v1/feedback", json={"trace_id": trace_id, "score": score})
            for score in (True, "0.5", "-1")
        ]
        accepted = client.post("/v1/feedback", json={"trace_id": trace_id, "score": -1})  # an integer is one
    for response in refused:
        assert_invalid(response, "score")
    assert accepted.status_code == 202, accepted.text
    feedback = [span for span in span_exporter.get_finished_spans() if span.name == attr.SPAN_FEEDBACK]
    assert [span_attributes(span)[attr.FEEDBACK_SCORE] for span in feedback] == [-1.0]


def test_refusals_before_the_api_answer_with_an_error_object(serve) -> None:
    """JSON nested deeper than Python reads (a RecursionError in FastAPI's parser), an unknown path or
    a wrong method were answered {"detail": ...}: no ``error`` object for an OpenAI client to read, and
    for the nesting only 'There was an error parsing the body'."""
    with serve() as client:
        deep = client.post(
            "/v1/chat/completions",
            content=b'{"messages": ' + b"[" * 100_000,
            headers={"content-type": "application/json"},
        )
        unknown = client.post("/v1/completions", json=chat_body())
        wrong_method = client.get("/v1/chat/completions")
        assert (deep.status_code, unknown.status_code, wrong_method.status_code) == (400, 404, 405)
        assert deep.json()["error"]["type"] == "invalid_request_error", deep.text
        assert "nests JSON too deeply" in deep.json()["error"]["message"]
        assert unknown.json()["error"]["type"] == "not_found_error", unknown.text
        assert wrong_method.json()["error"]["message"] == "Method Not Allowed", wrong_method.text
        assert wrong_method.headers["allow"] == "POST"
        assert post_json(client, chat_body()).status_code == 200


def test_a_405_allows_every_method_its_path_serves(serve, database_url: str) -> None:
    """``OPTIONS /v1/documents`` was a 405 with ``Allow: POST``, though the path serves GET too: Starlette
    names the methods of the first route that matches the path only."""
    wrong = [("OPTIONS", "/v1/documents"), ("PUT", "/v1/documents"), ("POST", "/v1/documents/refunds")]
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        answers = [client.request(method, path) for method, path in [*wrong, ("OPTIONS", "/healthz")]]
    assert [(answer.status_code, answer.headers.get("allow")) for answer in answers] == [
        (405, "GET, HEAD, POST"),
        (405, "GET, HEAD, POST"),
        (405, "DELETE"),
        (405, "GET, HEAD"),
    ]
    assert {answer.json()["error"]["message"] for answer in answers} == {"Method Not Allowed"}


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"stream": "yes"}, "stream"),
        ({"stream": 1}, "stream"),
        ({"stream": True, "stream_options": {"include_usage": "no"}}, "stream_options.include_usage"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_tokens": "2"}, "max_tokens"),
        ({"temperature": "0"}, "temperature"),
        ({"evallens": {"retrieval": "off"}}, "evallens.retrieval"),
    ],
    ids=["stream-yes", "stream-1", "include-usage-no", "max-tokens-true", "max-tokens-text",
         "temperature-text", "retrieval-off"],
)  # fmt: skip
def test_a_field_of_the_wrong_json_type_is_400_not_guessed(serve, fields: dict[str, Any], param: str) -> None:
    """Lax parsing guessed: "stream": "yes" streamed, "max_tokens": true asked for one token,
    "temperature": "0" was greedy. OpenAI's API refuses a value of the wrong JSON type, and a client
    that sends one has a bug it should hear about rather than an answer to a guess."""
    with serve() as client:
        assert_invalid(post_json(client, chat_body(**fields)), param)
        answered = post_json(client, chat_body(temperature=0, max_tokens=2))  # an integer is a number
        assert answered.status_code == 200, answered.text


def test_more_messages_than_the_context_has_tokens_is_400_before_they_are_tokenized(serve) -> None:
    """Empty messages passed the character check, so the chat template rendered and the tokenizer read
    every one before the count of tokens refused them: 100,000 (3 MiB of body) held the event loop, and
    every other request, for 2.5 s here, 250,000 (the 8 MiB body limit) several seconds each time."""
    many = [{"role": "user", "content": ""}] * TEST_MAX_MODEL_LEN + [{"role": "user", "content": QUESTION}]
    with serve() as client:
        refused = post_json(client, {**chat_body(), "messages": many})
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == "context_length_exceeded", error
        # refused by counting messages: no count of their tokens, which only tokenizing them gives
        assert f"holds {TEST_MAX_MODEL_LEN + 2} messages" in error["message"], error
        assert "in the messages" not in error["message"], error
        a_few = [{"role": "user", "content": ""}] * 10 + [{"role": "user", "content": QUESTION}]
        assert post_json(client, {**chat_body(), "messages": a_few}).status_code == 200


def test_more_stop_sequences_than_the_service_checks_is_400(serve) -> None:
    """vLLM checks every stop sequence against the answer after every token, on the event loop, with no
    limit of its own: 600,000 of them (an 8 MiB body) held every other request (a /healthz for 3.8 s
    here) while a 32-token answer took 5.8 s, and longer answers longer still."""
    many = [f"zq{index:07d}" for index in range(MAX_STOP_SEQUENCES + 1)]
    with serve() as client:
        assert_invalid(post_json(client, chat_body(stop=many)), "stop")
        answered = post_json(client, chat_body(stop=many[:MAX_STOP_SEQUENCES]))
        assert answered.status_code == 200, answered.text


def test_content_as_text_parts_is_answered_and_other_parts_are_400_by_name(serve) -> None:
    """OpenAI's SDKs send a message's content as an array of parts; every such request was a 400
    ("Input should be a valid string"). Text parts are one text; an image or audio part the service
    cannot read is refused by its type, never dropped from the question unsaid."""
    parts = [{"type": "text", "text": "How long do"}, {"type": "text", "text": "card refunds take?"}]
    image = {"type": "image_url", "image_url": {"url": "https://example.com/receipt.png"}}
    with serve() as client:
        as_parts = post_json(client, chat_body(parts))
        as_text = post_json(client, chat_body("How long do\ncard refunds take?"))
        refused = post_json(client, chat_body([*parts, image]))
    assert as_parts.status_code == 200, as_parts.text
    assert as_parts.json()["usage"] == as_text.json()["usage"]  # the same prompt reached the engine
    assert as_parts.json()["choices"][0]["message"] == as_text.json()["choices"][0]["message"]
    assert_invalid(refused, "messages.0.content")
    assert "'image_url' are not supported" in refused.json()["error"]["message"]


def test_asking_for_what_the_service_cannot_do_is_400_naming_the_field(serve) -> None:
    """n > 1, a JSON response format, tools and log probabilities were ignored: a client asking for
    three choices got one, one asking for a JSON schema (the eval judge) got free text it took for
    JSON, one requiring a tool call got text. The values that ask for nothing (clients' defaults)
    are still served."""
    tool = {"type": "function", "function": {"name": "refund_status", "parameters": {"type": "object"}}}
    schema = {"name": "verdict", "schema": {"type": "object"}, "strict": True}
    unserved: list[tuple[dict[str, Any], str]] = [
        ({"n": 3}, "n"),
        ({"response_format": {"type": "json_schema", "json_schema": schema}}, "response_format"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"tools": [tool]}, "tools"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"functions": [tool["function"]], "function_call": {"name": "refund_status"}}, "functions"),
        ({"logprobs": True, "top_logprobs": 2}, "logprobs"),
    ]
    defaults: dict[str, Any] = {
        "n": 1,
        "response_format": {"type": "text"},
        "tools": [],
        "tool_choice": "none",
        "logprobs": False,
    }
    with serve() as client:
        for fields, param in unserved:
            refused = post_json(client, chat_body(**fields))
            assert_invalid(refused, param)
            assert "not supported" in refused.json()["error"]["message"], refused.text
        answered = post_json(client, chat_body(**defaults))
    assert answered.status_code == 200, answered.text
    assert len(answered.json()["choices"]) == 1


def test_a_tag_header_the_collector_cannot_keep_is_400_and_recorded_nowhere(serve, span_exporter) -> None:
    """The tenant (and user, feature, eval ids) went from the header into the request's span as sent:
    a tenant longer than the collector keeps lost the request's whole trace (and its cost) while the
    client got 200, a tab went in as a label, and a UTF-8 tenant arrived as Latin-1 mojibake."""
    refused_headers: list[dict[str, str | bytes]] = [
        {attr.HEADER_TENANT: "t" * (DEFAULT_MAX_KEY_CHARS + 1)},
        {attr.HEADER_TENANT: "shop\t7"},
        {attr.HEADER_TENANT: "café".encode()},
        {attr.HEADER_USER: "u" * 10_000},
    ]
    longest = "t" * DEFAULT_MAX_KEY_CHARS
    with serve() as client:
        refused = [client.post("/v1/chat/completions", json=chat_body(), headers=h) for h in refused_headers]
        answered = client.post(
            "/v1/chat/completions", json=chat_body(), headers={attr.HEADER_TENANT: longest}
        )
    for response, headers in zip(refused, refused_headers, strict=True):
        assert_invalid(response, next(iter(headers)))
    assert answered.status_code == 200, answered.text
    chats = [span_attributes(span) for span in span_exporter.get_finished_spans() if not span.parent]
    assert [span.get(attr.TENANT) for span in chats] == [longest]
    assert all(attr.USER not in span for span in chats)
