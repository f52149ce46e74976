"""Request bodies on the real stack (vLLM tiny model, PostgreSQL, uvicorn on a real socket): a body over
``EVALLENS_SERVICE_MAX_BODY_BYTES`` is a 413 before it is read whole, one that stalls is a 408, one that
would take the bytes all requests hold past ``EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT`` is a 429, and
none stores anything, reaches the engine, or stops the service answering others. A body sent with a
content coding (``Content-Encoding: gzip``, ``br``) is a 415, which the service decodes none of.

Before the limit, Starlette read any body whole into memory (one client could send gigabytes) and
waited for a stalled one for ever; before the shared budget, many clients could each hold a body of the
largest size at once. Each refusal is counted in the service's errors metric (it used to go uncounted)."""

import contextlib
import gzip
import json
import select
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.evallens.service.conftest import counted_since, errors_counted, wait_until
from tests.evallens.service.test_openapi import assert_documented

pytestmark = pytest.mark.slow

MAX_BODY_BYTES = 16 * 1024
IDLE_TIMEOUT_S = 2.0
LIMITS = {"service_max_body_bytes": MAX_BODY_BYTES, "service_body_idle_timeout_s": IDLE_TIMEOUT_S}
SOCKET_TIMEOUT_S = 30.0  # a guard against a test that hangs, not a figure under test
CHUNK = b"a" * 64 * 1024


def chat_body(content: str = "How long do card refunds take?") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "max_tokens": 2, "temperature": 0}


def document_body(num_bytes: int) -> bytes:
    """A document whose JSON body is exactly ``num_bytes`` long."""
    empty = {"id": "manual", "title": "Manual", "text": ""}
    num_text_bytes = num_bytes - len(json.dumps(empty).encode())
    prose = "Refunds reach your card in 5 to 10 business days. " * (num_text_bytes // 50 + 1)
    body = json.dumps({**empty, "text": prose[:num_text_bytes]}).encode()
    assert len(body) == num_bytes
    return body


def assert_refused(response: httpx.Response, status: int, code: str, setting: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and setting in error["message"], error


def engine_requests(client: httpx.Client) -> float:
    """Requests the engine finished, from vLLM's own counter on ``/metrics``."""
    text = client.get("/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("vllm:request_success_total{")
    )


class RawAnswer:
    """What a raw-socket request got back, and how many body bytes the client managed to send."""

    def __init__(self, raw: bytes, num_bytes_sent: int) -> None:
        head, _, body = raw.partition(b"\r\n\r\n")
        self.status_line = head.split(b"\r\n", 1)[0].decode()
        self.status_code = int(self.status_line.split()[1]) if self.status_line else 0
        self.headers = head.decode().lower()
        self.body = body
        self.num_bytes_sent = num_bytes_sent

    def json(self) -> Any:
        return json.loads(self.body)


def raw_post(base_url: str, path: str, headers: dict[str, str], parts: Iterable[bytes]) -> RawAnswer:
    """POST over a plain socket, one part after another, stopping as soon as the server answers (or
    hangs up); then read its answer. httpx cannot do this: it reads nothing until it sent everything."""
    address = urlsplit(base_url)
    head = f"POST {path} HTTP/1.1\r\nhost: {address.netloc}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    num_bytes_sent = 0
    with socket.create_connection((address.hostname, address.port), timeout=SOCKET_TIMEOUT_S) as sock:
        sock.sendall(head.encode())
        try:
            for part in parts:
                if select.select([sock], [], [], 0)[0]:
                    break  # the server has answered: stop sending
                sock.sendall(part)
                num_bytes_sent += len(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered and hung up while we were still sending
        raw = b""
        try:
            while chunk := sock.recv(64 * 1024):
                raw += chunk
        except ConnectionResetError:
            pass
    return RawAnswer(raw, num_bytes_sent)


def chunked(parts: Iterable[bytes]) -> Iterator[bytes]:
    """``parts`` in HTTP/1.1 chunked transfer encoding."""
    for part in parts:
        yield f"{len(part):x}\r\n".encode() + part + b"\r\n"
    yield b"0\r\n\r\n"


def test_a_document_over_the_limit_is_a_413_and_stores_nothing(serve, database_url: str) -> None:
    """A document one byte over the limit is refused whole; one at the limit is stored."""
    with serve(database_url=database_url, retrieval_enabled=False, **LIMITS) as client:
        json_header = {"content-type": "application/json"}
        refused = client.post("/v1/documents", content=document_body(MAX_BODY_BYTES + 1), headers=json_header)
        assert_refused(refused, 413, "body_too_large", "EVALLENS_SERVICE_MAX_BODY_BYTES")
        assert str(MAX_BODY_BYTES) in refused.json()["error"]["message"]
        assert client.get("/v1/documents").json()["data"] == []
        stored = client.post("/v1/documents", content=document_body(MAX_BODY_BYTES), headers=json_header)
        assert stored.status_code == 201 and stored.json()["status"] == "created", stored.text
        assert [document["id"] for document in client.get("/v1/documents").json()["data"]] == ["manual"]


def test_a_body_in_a_content_coding_is_a_415_and_records_nothing(
    serve, database_url: str, span_exporter
) -> None:
    """A gzip body was read as its compressed bytes (a 400 saying it is not UTF-8 text) and a JSON body
    labelled ``br`` was answered as if unlabelled: the service decodes no content coding, so it answers
    either with a 415 naming the coding and Accept-Encoding: identity (RFC 9110 §15.5.16, RFC 7694)."""
    plain = {
        "/v1/chat/completions": json.dumps(chat_body()).encode(),
        "/v1/documents": document_body(1024),
        "/v1/feedback": json.dumps({"trace_id": "0" * 32, "score": 1}).encode(),
    }
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        before, errors_before = engine_requests(client), errors_counted(client)
        num_spans = len(span_exporter.get_finished_spans())
        for path, body in plain.items():
            # br: only the label, on plain JSON (answered 200 as if unlabelled before)
            for coding, sent in (("gzip", gzip.compress(body)), ("br", body)):
                headers = {"content-type": "application/json", "content-encoding": coding}
                refused = client.post(path, content=sent, headers=headers)
                assert refused.status_code == 415, (path, coding, refused.text)
                error = refused.json()["error"]
                assert error["code"] == "unsupported_content_encoding" and repr(coding) in error["message"]
                assert refused.headers["accept-encoding"] == "identity"
        assert counted_since(errors_before, client) == {"content_encoding": 6.0}
        assert engine_requests(client) == before
        assert len(span_exporter.get_finished_spans()) == num_spans  # no answer, no feedback recorded
        assert client.get("/v1/documents").json()["data"] == []
        # identity, then no Content-Encoding at all (the document again: stored, then unchanged)
        for unencoded, statuses in (
            ({"content-encoding": "identity"}, [200, 201, 202]),
            ({}, [200, 200, 202]),
        ):
            headers = {"content-type": "application/json", **unencoded}
            answers = [client.post(path, content=body, headers=headers) for path, body in plain.items()]
            assert [answer.status_code for answer in answers] == statuses, [answer.text for answer in answers]
        assert engine_requests(client) == before + 2
        assert [document["id"] for document in client.get("/v1/documents").json()["data"]] == ["manual"]


def test_a_request_without_a_body_is_served_whatever_its_content_encoding(serve, database_url: str) -> None:
    """A client that labels every request gzip was refused ``GET /v1/documents``, ``/healthz`` and
    ``/openapi.json`` with a 415 that none of them documents: without a body there is nothing to decode.
    A body it does send is still refused, declared by its length or sent chunked."""
    gzip_label = {"content-encoding": "gzip"}
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        errors_before = errors_counted(client)
        for path in ("/healthz", "/openapi.json", "/v1/documents", "/metrics"):
            answered = client.get(path, headers=gzip_label)
            assert answered.status_code == 200, (path, answered.text)
        unknown = client.delete("/v1/documents/manual", headers=gzip_label)
        assert unknown.status_code == 404, unknown.text
        json_gzip = {"content-type": "application/json", **gzip_label}
        chunked_body = client.post(
            "/v1/documents", content=iter([gzip.compress(document_body(1024))]), headers=json_gzip
        )
        assert chunked_body.status_code == 415, chunked_body.text
        assert counted_since(errors_before, client) == {"not_found": 1.0, "content_encoding": 1.0}
        assert client.get("/v1/documents").json()["data"] == []


def test_a_get_head_or_delete_with_a_body_is_a_documented_400_whatever_its_size_or_coding(
    serve, database_url: str
) -> None:
    """A GET or DELETE sent with a body was answered by that body: a 415 for its coding, a 413 for its
    declared length, neither documented for those routes, else served with the body unread (a DELETE with
    a body deleted). No route of these methods reads a body: each is one 400 the schema documents,
    before a byte of the body is read, and the connection is closed on it."""
    gzipped, over_the_cap = gzip.compress(b"{}"), b"x" * (MAX_BODY_BYTES + 1)
    with serve(database_url=database_url, retrieval_enabled=False, **LIMITS) as client:
        json_header = {"content-type": "application/json"}
        assert client.post("/v1/documents", content=document_body(1024), headers=json_header).is_success
        spec = client.get("/openapi.json").json()
        errors_before = errors_counted(client)
        answers = {
            ("get", "/v1/documents"): client.request(
                "GET", "/v1/documents", content=gzipped, headers={"content-encoding": "gzip"}
            ),
            ("get", "/healthz"): client.request("GET", "/healthz", content=over_the_cap),
            ("get", "/metrics"): client.request("GET", "/metrics", content=iter([b"{}"])),  # chunked
            ("delete", "/v1/documents/{document_id}"): client.request(
                "DELETE", "/v1/documents/manual", json={"reason": "outdated"}
            ),
        }
        head = client.request("HEAD", "/healthz", content=b"{}")
        counted = counted_since(errors_before, client)
        listed = client.get("/v1/documents").json()["data"]
    for (method, path), answer in answers.items():
        assert answer.status_code == 400, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "body_not_allowed", answer.text
        assert answer.headers["connection"] == "close"
        assert_documented(spec, method, path, answer)
    assert (head.status_code, head.headers["connection"]) == (400, "close")
    assert counted == {"invalid_request": 5.0}
    assert [document["id"] for document in listed] == ["manual"]  # the DELETE with a body deleted nothing


def test_a_chat_body_over_the_limit_is_a_413_that_never_reaches_the_engine(serve, span_exporter) -> None:
    with serve(**LIMITS) as client:
        before, num_spans = engine_requests(client), len(span_exporter.get_finished_spans())
        refused = client.post("/v1/chat/completions", json=chat_body("refunds " * (MAX_BODY_BYTES // 8)))
        assert_refused(refused, 413, "body_too_large", "EVALLENS_SERVICE_MAX_BODY_BYTES")
        assert engine_requests(client) == before
        assert len(span_exporter.get_finished_spans()) == num_spans  # the chat serving never ran
        answered = client.post("/v1/chat/completions", json=chat_body())
        assert answered.status_code == 200, answered.text
        assert engine_requests(client) == before + 1
        assert len(span_exporter.get_finished_spans()) > num_spans


def test_a_chunked_body_over_the_limit_is_refused_before_it_is_read_whole(serve) -> None:
    """No Content-Length to refuse up front: the bytes are counted as they arrive."""
    num_chunks = 512  # 32 MiB offered, 2048 times the limit
    parts = [b'{"messages": [{"role": "user", "content": "', *[CHUNK] * num_chunks, b'"}]}']
    with serve(**LIMITS) as client:
        url = str(client.base_url)
        before, errors_before = engine_requests(client), errors_counted(client)
        answer = raw_post(
            url,
            "/v1/chat/completions",
            {"content-type": "application/json", "transfer-encoding": "chunked"},
            chunked(parts),
        )
        assert answer.status_code == 413, answer.status_line
        assert counted_since(errors_before, client) == {"body_too_large": 1.0}
        assert answer.json()["error"]["code"] == "body_too_large"
        assert "connection: close" in answer.headers
        assert answer.num_bytes_sent < num_chunks * len(CHUNK) // 2
        assert engine_requests(client) == before
        assert client.post("/v1/chat/completions", json=chat_body()).status_code == 200


def test_a_huge_declared_length_is_a_413_before_any_body_byte(serve) -> None:
    """A client that declares a terabyte and trickles it never gets the service to wait for it."""
    with serve(**LIMITS) as client:
        errors_before = errors_counted(client)
        answer = raw_post(
            str(client.base_url),
            "/v1/chat/completions",
            {"content-type": "application/json", "content-length": str(10**12)},
            [b'{"messages": '],
        )
        assert answer.status_code == 413, answer.status_line
        assert counted_since(errors_before, client) == {"body_too_large": 1.0}
        assert "EVALLENS_SERVICE_MAX_BODY_BYTES" in answer.json()["error"]["message"]
        assert client.get("/healthz").status_code == 200


def test_a_stalled_body_is_a_408_and_the_service_keeps_answering(serve) -> None:
    """The client sends part of its body and stops; meanwhile others are answered."""
    body = json.dumps(chat_body()).encode()
    with serve(**LIMITS) as client:
        url = str(client.base_url)

        def stalled_then_others() -> RawAnswer:
            def parts() -> Iterator[bytes]:
                yield body[:10]
                # while this body stalls, another client is served (the stall holds nobody else)
                answered = client.post("/v1/chat/completions", json=chat_body())
                assert answered.status_code == 200, answered.text

            return raw_post(
                url,
                "/v1/chat/completions",
                {"content-type": "application/json", "content-length": str(len(body))},
                parts(),
            )

        errors_before = errors_counted(client)
        answer = stalled_then_others()
        assert answer.status_code == 408, answer.status_line
        assert counted_since(errors_before, client) == {"body_timeout": 1.0}
        error = answer.json()["error"]
        assert error["code"] == "body_timeout" and "EVALLENS_SERVICE_BODY_IDLE_TIMEOUT_S" in error["message"]
        assert client.post("/v1/chat/completions", json=chat_body()).status_code == 200


def open_body(base_url: str, declared_bytes: int, first_part: bytes) -> socket.socket:
    """A chat request that declares ``declared_bytes`` of body, sends ``first_part`` and holds on."""
    address = urlsplit(base_url)
    sock = socket.create_connection((address.hostname, address.port), timeout=SOCKET_TIMEOUT_S)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: {address.netloc}\r\n"
        f"content-type: application/json\r\ncontent-length: {declared_bytes}\r\n\r\n"
    )
    sock.sendall(head.encode() + first_part)
    return sock


# All of a body of the largest size but its last bytes: what a client holds of the budget is what it sent.
NEARLY_WHOLE = b'{"messages": ' + b" " * (MAX_BODY_BYTES - 32)


def test_bodies_held_at_once_share_a_budget_and_the_request_past_it_is_a_429(serve) -> None:
    """Two clients each hold a body of the largest size, all but its end sent; together they fill the
    budget, so a third request is refused before its body is read, and answered once they have gone."""
    limits = {
        **LIMITS,
        "service_max_body_bytes_in_flight": 2 * MAX_BODY_BYTES,
        "service_body_idle_timeout_s": 60.0,
    }
    with serve(**limits) as client:
        url = str(client.base_url)
        held = [open_body(url, MAX_BODY_BYTES, NEARLY_WHOLE) for _ in range(2)]

        def budget_full() -> bool:
            """Both bodies held, and a request refused for it. A held body that arrived while a probe was
            in flight was itself refused (the probe held bytes then): it is sent again."""
            for index, sock in enumerate(held):
                if select.select([sock], [], [], 0)[0]:  # answered (429) or closed
                    sock.close()
                    held[index] = open_body(url, MAX_BODY_BYTES, NEARLY_WHOLE)
            client.get("/healthz")  # a round trip after the heads: the service has read them
            return bool(client.post("/v1/chat/completions", json=chat_body()).status_code == 429)

        try:
            assert wait_until(budget_full, timeout_s=SOCKET_TIMEOUT_S)
            before, errors_before = engine_requests(client), errors_counted(client)
            refused = client.post("/v1/chat/completions", json=chat_body())
            assert engine_requests(client) == before  # refused before the chat serving ran
            assert counted_since(errors_before, client) == {"body_bytes_in_flight": 1.0}
            assert_refused(refused, 429, "body_bytes_in_flight", "EVALLENS_SERVICE_MAX_BODY_BYTES_IN_FLIGHT")
            assert refused.headers["retry-after"] == "1"
            assert client.get("/healthz").status_code == 200  # no body: nothing to hold
            # no length declared: the bytes are counted as they arrive, and the first ones find no room
            streamed = raw_post(
                url,
                "/v1/chat/completions",
                {"content-type": "application/json", "transfer-encoding": "chunked"},
                chunked([json.dumps(chat_body()).encode()]),
            )
            assert streamed.status_code == 429, streamed.status_line
            assert streamed.json()["error"]["code"] == "body_bytes_in_flight"
            assert engine_requests(client) == before
            assert counted_since(errors_before, client) == {"body_bytes_in_flight": 2.0}
        finally:
            for sock in held:
                sock.close()
        # their bytes are given back when they go, and the service answers again
        assert wait_until(
            lambda: client.post("/v1/chat/completions", json=chat_body()).status_code == 200,
            timeout_s=SOCKET_TIMEOUT_S,
        )


def test_a_declared_length_holds_nothing_of_the_budget_until_its_bytes_come(serve) -> None:
    """A request held the whole length it declared from its head on: two clients each declaring a body
    of the largest size and sending nothing more than its first bytes filled the budget (eight do with
    the defaults, no API key needed), and every other request with a body was a 429 while they waited,
    again and again each time they reconnected."""
    limits = {
        **LIMITS,
        "service_max_body_bytes_in_flight": 2 * MAX_BODY_BYTES,
        "service_body_idle_timeout_s": 60.0,
    }
    with serve(**limits) as client:
        url = str(client.base_url)
        declared = [open_body(url, MAX_BODY_BYTES, b'{"messages": ') for _ in range(2)]
        try:
            client.get("/healthz")  # a round trip after their heads: the service has read them
            answered = client.post("/v1/chat/completions", json=chat_body())
            assert answered.status_code == 200, answered.text
            for sock in declared:
                assert not select.select([sock], [], [], 0)[0]  # still open, still waiting for a body
        finally:
            for sock in declared:
                sock.close()


def test_bodies_that_trickle_do_not_hold_the_budget_from_others(serve) -> None:
    """Only pauses were timed: a client sending a byte a little more often than every
    EVALLENS_SERVICE_BODY_IDLE_TIMEOUT_S kept its request for as long as its declared length takes at
    that pace (years for 8 MiB), and with it the bytes that length holds of the shared budget, so eight
    such requests (no API key needed: the key is checked once the body is in) were a 429 to every
    other client all along."""
    limits = {
        **LIMITS,
        "service_max_body_bytes_in_flight": 2 * MAX_BODY_BYTES,
        "service_body_idle_timeout_s": 1.0,
        "service_body_timeout_s": 3.0,
    }
    with serve(**limits) as client:
        url = str(client.base_url)
        # all but 200 bytes of bodies of the largest size: together they leave less room than the
        # honest request's body takes, and at a byte every half second they would take 100 s to end
        first_part = b'{"messages": ' + b" " * (MAX_BODY_BYTES - 213)
        trickling = [open_body(url, MAX_BODY_BYTES, first_part) for _ in range(2)]
        honest = chat_body("How long do card refunds take? " * 16)
        stop = threading.Event()

        def trickle() -> None:
            while not stop.wait(0.5):
                for sock in trickling:
                    with contextlib.suppress(OSError):  # the service answered and closed it
                        sock.sendall(b" ")

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        try:
            errors_before = errors_counted(client)
            assert client.post("/v1/chat/completions", json=honest).status_code == 429  # they hold it
            assert wait_until(
                lambda: client.post("/v1/chat/completions", json=honest).status_code == 200,
                timeout_s=SOCKET_TIMEOUT_S,
            )
            for sock in trickling:
                answer = RawAnswer(read_all(sock), 0)
                assert answer.status_code == 408, answer.status_line
                error = answer.json()["error"]
                assert (
                    error["code"] == "body_timeout" and "EVALLENS_SERVICE_BODY_TIMEOUT_S" in error["message"]
                )
            assert counted_since(errors_before, client).get("body_timeout") == 2.0
        finally:
            stop.set()
            sender.join()
            for sock in trickling:
                sock.close()


def read_all(sock: socket.socket) -> bytes:
    """Everything the service sends on ``sock`` until it hangs up."""
    raw = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(64 * 1024):
            raw += chunk
    return raw


def test_requests_refused_before_the_chat_serving_are_counted_and_its_own_refusals_once(
    serve, database_url: str
) -> None:
    """An invalid body, a missing key and an oversized body never reach the chat serving, which counts
    the requests it refuses itself (a prompt past the context): each is counted once, by its kind."""
    with serve(database_url=database_url, auth_enabled=True, retrieval_enabled=False, **LIMITS) as client:
        before = errors_counted(client)
        missing_key = client.post("/v1/chat/completions", json=chat_body())
        assert missing_key.status_code == 401, missing_key.text
        assert counted_since(before, client) == {"auth": 1.0}
    with serve(**LIMITS) as client:
        before = errors_counted(client)
        invalid = client.post("/v1/chat/completions", json={"messages": "not a list"})
        assert invalid.status_code == 400, invalid.text
        too_large = client.post("/v1/chat/completions", json=chat_body("refunds " * (MAX_BODY_BYTES // 8)))
        assert too_large.status_code == 413, too_large.text
        assert counted_since(before, client) == {"invalid_request": 1.0, "body_too_large": 1.0}
        before = errors_counted(client)
        past_context = client.post("/v1/chat/completions", json={**chat_body(), "max_tokens": 10**6})
        assert past_context.status_code == 400, past_context.text
        assert past_context.json()["error"]["code"] == "context_length_exceeded"
        assert counted_since(before, client) == {"context_length": 1.0}
