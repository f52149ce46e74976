"""``HEAD`` on every GET route is answered as GET without the body (RFC 9110 §9.3.2), behind the same API
key, and a 405's ``Allow`` names it (real service, tiny vLLM model, real PostgreSQL, uvicorn).

FastAPI's routes do not answer HEAD as Starlette's do: ``HEAD /healthz`` (a load balancer's or uptime
checker's probe), ``/readyz``, ``/metrics``, ``/v1/models`` and ``/v1/documents`` were each a 405."""

from typing import Any

import pytest

from tests.evallens.service.conftest import ingest_and_read_keys

pytestmark = pytest.mark.slow

GET_PATHS = {"/healthz", "/readyz", "/metrics", "/v1/models", "/v1/config", "/v1/documents"}


def test_every_get_route_answers_head_as_get_without_the_body(serve: Any, database_url: str) -> None:
    ingest, read = ingest_and_read_keys(database_url)
    with serve(database_url=database_url, auth_enabled=True, retrieval_enabled=False) as client:
        spec = client.get("/openapi.json").json()
        paths = sorted(path for path, operations in spec["paths"].items() if "get" in operations)
        assert set(paths) >= GET_PATHS
        answers = {
            path: (client.get(path, headers=ingest), client.head(path, headers=ingest))
            for path in [*paths, "/openapi.json"]
        }
        refusals = [
            (client.get("/v1/documents", headers=key), client.head("/v1/documents", headers=key))
            for key in ({}, read)
        ]
    assert not [path for path, operations in spec["paths"].items() if "head" in operations]  # implied by GET
    for path, (got, head) in answers.items():
        assert (head.status_code, head.content) == (200, b""), (path, head.status_code, head.text)
        assert got.status_code == 200 and got.content, (path, got.text)
        assert head.headers["content-type"] == got.headers["content-type"], path
        if path != "/metrics":  # its numbers move between the two requests
            assert head.headers["content-length"] == got.headers["content-length"] == str(len(got.content))
    # the API key is checked for HEAD as for GET: no key is a 401 (WWW-Authenticate), a read key a 403
    assert [(got.status_code, head.status_code) for got, head in refusals] == [(401, 401), (403, 403)]
    for got, head in refusals:
        assert head.content == b""
        assert head.headers.get("www-authenticate") == got.headers.get("www-authenticate")


def test_a_405_names_head_where_its_path_serves_get(serve: Any, database_url: str) -> None:
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        answers = [
            client.delete("/v1/documents"),
            client.post("/healthz"),
            client.head("/v1/chat/completions"),
            client.head("/v1/documents/refunds"),
        ]
    assert [(answer.status_code, answer.headers.get("allow")) for answer in answers] == [
        (405, "GET, HEAD, POST"),
        (405, "GET, HEAD"),
        (405, "POST"),
        (405, "DELETE"),
    ]
