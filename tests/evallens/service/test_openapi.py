"""The OpenAPI schema a served app publishes (``GET /openapi.json``) against what it answers, on the real
stack (vLLM tiny model, PostgreSQL, uvicorn): every error is documented as the OpenAI-style error body
the service sends, and every bad request's answer is one the schema documents for that operation.

The schema documented FastAPI's 422 validation error on every route with a body or parameters (the
service answers those as 400s and never sends a 422), no error body on most statuses the service answers
(408, 413, 415, 403, ...), neither the documents' 201 nor their 404, and ``/metrics`` and streamed chat
as JSON (found by fuzzing the service with schemathesis)."""

import ast
import gzip
import importlib
import inspect
import json
import pkgutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

import httpx
import jsonschema  # type: ignore[import-untyped]
import psycopg
import pytest

from evallens.service import budgets
from evallens.service import chat as chat_package
from evallens.service import errors as service_errors
from evallens.service.errors import ServiceError
from evallens.settings.collector import DEFAULT_MAX_KEY_CHARS
from evallens.telemetry import attributes as attr
from tests.evallens.service.conftest import ingest_and_read_keys

pytestmark = pytest.mark.slow

ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorResponse"}
MAX_BODY_BYTES = 16 * 1024
CHAT = {"messages": [{"role": "user", "content": "How long do card refunds take?"}], "max_tokens": 2}
DOCUMENT = {"id": "refunds", "title": "Refunds", "text": "Refunds reach your card in 5 to 10 days."}
UNKNOWN_RESPONSE_ID = "chatcmpl-" + "0" * 32


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each operation of ``spec`` as (method, path, operation)."""
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            yield method, path, operation


def test_the_schema_documents_every_error_as_the_error_body_and_no_422(serve, database_url: str) -> None:
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        spec = client.get("/openapi.json").json()
    documented = {(method, path) for method, path, _ in operations(spec)}
    assert {("post", "/v1/documents"), ("delete", "/v1/documents/{document_id}")} <= documented
    schemas = spec["components"]["schemas"]
    assert not {"HTTPValidationError", "ValidationError"} & schemas.keys()
    assert set(schemas["ErrorResponse"]["required"]) == {"error"}
    assert set(schemas["ErrorDetail"]["required"]) == {"message", "type"}
    for method, path, operation in operations(spec):
        responses = operation["responses"]
        assert "422" not in responses, (method, path)
        errors = {status: response for status, response in responses.items() if int(status) >= 400}
        if (method, path) == ("post", "/v1/chat/completions"):  # a client gone: no body, read by no one
            assert "content" not in errors.pop("499"), responses
        if (method, path) == ("get", "/readyz"):  # its 503 is the readiness report, not an error
            assert responses["503"]["content"]["application/json"]["schema"]["$ref"].endswith("Report")
            continue
        for status, response in errors.items():
            assert response["content"] == {"application/json": {"schema": ERROR_SCHEMA}}, (
                method,
                path,
                status,
            )
        if "requestBody" in operation:
            assert {"400", "408", "413", "415", "429"} <= errors.keys(), (method, path)
    assert spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"].keys() == {"text/plain"}
    chat = spec["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]["content"]
    assert chat.keys() == {"application/json", "text/event-stream"}
    assert chat["application/json"]["schema"] == {"$ref": "#/components/schemas/ChatCompletionResponse"}
    assert {"200", "201"} <= spec["paths"]["/v1/documents"]["post"]["responses"].keys()
    assert "404" in spec["paths"]["/v1/documents/{document_id}"]["delete"]["responses"]
    assert "404" in spec["paths"]["/v1/feedback"]["post"]["responses"]
    one_document = "/v1/documents/{document_id}"
    failing = [("post", "/v1/chat/completions"), ("get", "/v1/documents"), ("post", "/v1/documents")]
    for method, path in [*failing, ("delete", one_document)]:  # the engine or PostgreSQL failing under them
        assert "500" in spec["paths"][path][method]["responses"], (method, path)


def errors_constructed(modules: list[ModuleType]) -> dict[str, int]:
    """Each ``ServiceError`` class that the source of ``modules`` constructs or raises by name, with the
    status it answers."""
    classes = {
        name: value
        for name, value in vars(service_errors).items()
        if isinstance(value, type) and issubclass(value, ServiceError) and value is not ServiceError
    }
    named: dict[str, int] = {}
    for module in modules:
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            raised = (
                node.func if isinstance(node, ast.Call) else node.exc if isinstance(node, ast.Raise) else None
            )
            if isinstance(raised, ast.Name) and raised.id in classes:
                named[raised.id] = classes[raised.id].status_code
    return named


def test_the_chat_route_documents_every_status_its_code_answers(serve) -> None:
    """Chat's 502 (``engine_bad_reply``: an engine reply its protocol does not allow) was documented
    nowhere, and its 503 (the engine not ready, failed or at capacity) only as the API key's. Every error
    the chat path's own code makes (the chat package, and the admission and budgets it runs under) has its
    status documented for the route; what the API key, the tags and the body limit answer comes from
    ``KEY_ERRORS`` and ``BODY_ERRORS``, which the bad requests below check against what is answered."""
    chat_modules = [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(chat_package.__path__, f"{chat_package.__name__}.")
    ]
    constructed = errors_constructed([*chat_modules, budgets])
    assert {"EngineBadReply", "EngineUnavailable", "BudgetExceeded", "Overloaded"} <= constructed.keys()
    with serve(retrieval_enabled=False) as client:
        spec = client.get("/openapi.json").json()
    documented = documented_errors(spec["paths"]["/v1/chat/completions"]["post"])
    missing = {name: status for name, status in constructed.items() if str(status) not in documented}
    assert not missing, (missing, sorted(documented))


class Bad(NamedTuple):
    """A bad request to one operation (``path`` as documented, ``url`` with its parameters filled in),
    with ``request`` the arguments of ``httpx.Client.request``, and the status it is answered with."""

    status: int
    method: str
    path: str
    request: dict[str, Any]
    url: str | None = None


def test_what_the_service_answers_bad_requests_is_what_the_schema_documents(serve, database_url: str) -> None:
    """A sample of bad requests to every operation that takes input: each answer's status is documented
    for that operation, and its body is valid against the schema documented for it."""
    ingest, read = ingest_and_read_keys(database_url)
    json_with = {"content-type": "application/json"} | ingest
    tag_too_long = {attr.HEADER_FEATURE: "f" * (DEFAULT_MAX_KEY_CHARS + 1)}
    too_large = json.dumps({**DOCUMENT, "text": "refunds " * MAX_BODY_BYTES})
    gzip_with = json_with | {"content-encoding": "gzip"}
    samples: list[Bad] = []
    for path, good in (("/v1/chat/completions", CHAT), ("/v1/feedback", {"trace_id": "0" * 32, "score": 1})):
        gzipped = gzip.compress(json.dumps(good).encode())
        samples += [
            Bad(400, "post", path, {"content": '{"messages": [', "headers": json_with}),
            Bad(400, "post", path, {"json": [good], "headers": ingest}),
            Bad(400, "post", path, {"json": good, "headers": ingest | tag_too_long}),
            Bad(401, "post", path, {"json": good}),
            Bad(403, "post", path, {"json": good, "headers": read}),
            Bad(413, "post", path, {"content": too_large, "headers": json_with}),
            Bad(415, "post", path, {"content": gzipped, "headers": gzip_with}),
        ]
    one_document = "/v1/documents/{document_id}"
    unknown_answer = {"response_id": UNKNOWN_RESPONSE_ID, "thumbs": "down"}
    samples += [
        Bad(400, "post", "/v1/chat/completions", {"json": {**CHAT, "temperature": "hot"}, "headers": ingest}),
        Bad(404, "post", "/v1/feedback", {"json": unknown_answer, "headers": ingest}),
        Bad(400, "post", "/v1/documents", {"json": {"id": "refunds"}, "headers": ingest}),
        Bad(401, "post", "/v1/documents", {"json": DOCUMENT}),
        Bad(403, "post", "/v1/documents", {"json": DOCUMENT, "headers": read}),
        Bad(413, "post", "/v1/documents", {"content": too_large, "headers": json_with}),
        Bad(415, "post", "/v1/documents", {"json": DOCUMENT, "headers": ingest | {"content-encoding": "br"}}),
        Bad(400, "get", "/v1/documents", {"headers": ingest | tag_too_long}),
        Bad(401, "get", "/v1/documents", {}),
        Bad(403, "get", "/v1/documents", {"headers": read}),
        Bad(400, "delete", one_document, {"headers": ingest}, url="/v1/documents/%00"),
        Bad(401, "delete", one_document, {}, url="/v1/documents/refunds"),
        Bad(404, "delete", one_document, {"headers": ingest}, url="/v1/documents/refunds"),
    ]
    settings = {"service_max_body_bytes": MAX_BODY_BYTES, "retrieval_enabled": False}
    with serve(database_url=database_url, auth_enabled=True, **settings) as client:
        spec = client.get("/openapi.json").json()
        samples += [  # every GET and DELETE, sent a body: it takes none
            Bad(
                400,
                method,
                path,
                {"content": b"{}", "headers": ingest},
                url=path.format(document_id="refunds"),
            )
            for method, path, _ in operations(spec)
            if method in ("get", "delete")
        ]
        answers = [client.request(bad.method, bad.url or bad.path, **bad.request) for bad in samples]
    for bad, answer in zip(samples, answers, strict=True):
        assert answer.status_code == bad.status, (bad.method, bad.path, bad.status, answer.text)
        assert_documented(spec, bad.method, bad.path, answer)
    takes_input = {
        (method, path)
        for method, path, operation in operations(spec)
        if {"parameters", "requestBody"} & operation.keys() or documented_errors(operation)
    }
    assert {(bad.method, bad.path) for bad in samples} == takes_input


def test_a_failure_the_service_did_not_expect_is_the_documented_500(serve, database_url: str) -> None:
    """A 500 (here PostgreSQL without the knowledge base's tables) was Starlette's text body, "Internal
    Server Error", documented nowhere, and the server closed the connection unannounced: the client's next
    request on it was reset."""
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        spec = client.get("/openapi.json").json()
        with psycopg.connect(database_url, autocommit=True) as connection:
            connection.execute("DROP TABLE chunks, documents")
        answers = {
            ("get", "/v1/documents"): client.get("/v1/documents"),
            ("post", "/v1/documents"): client.post("/v1/documents", json=DOCUMENT),
        }
    for (method, path), answer in answers.items():
        assert answer.status_code == 500, answer.text
        assert answer.json()["error"]["type"] == "server_error" and "Traceback" not in answer.text
        assert answer.headers["connection"] == "close"
        assert_documented(spec, method, path, answer)


def documented_errors(operation: dict[str, Any]) -> set[str]:
    """The statuses ``operation`` documents with the error body."""
    return {
        status
        for status, response in operation["responses"].items()
        if response.get("content", {}).get("application/json", {}).get("schema") == ERROR_SCHEMA
    }


def assert_documented(spec: dict[str, Any], method: str, path: str, answer: httpx.Response) -> None:
    """``answer``'s status is documented for the operation as the error body, and its body is valid
    against that schema (which FastAPI's own ``{"detail": ...}`` is not)."""
    responses = spec["paths"][path][method]["responses"]
    assert str(answer.status_code) in responses, (method, path, answer.status_code, answer.text)
    assert answer.headers["content-type"] == "application/json", (method, path, answer.headers)
    schema = responses[str(answer.status_code)]["content"]["application/json"]["schema"]
    assert schema == ERROR_SCHEMA, (method, path, answer.status_code)
    validator = jsonschema.Draft202012Validator({**schema, "components": spec["components"]})
    validator.validate(answer.json())
    assert not validator.is_valid({"detail": answer.json()["error"]["message"]})
