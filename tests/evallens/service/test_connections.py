"""Connections on the real stack (vLLM tiny model, uvicorn on a real socket, as `evallens service` runs
it): a client that opens connections and never sends a whole request head does not keep them, and
one that sends a huge request head is refused before it is read whole."""

import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.slow

SOCKET_TIMEOUT_S = 30.0  # a guard against a test that hangs, not a figure under test
CHAT = {"messages": [{"role": "user", "content": "How long do card refunds take?"}], "max_tokens": 2}


def connect(base_url: str) -> socket.socket:
    address = urlsplit(base_url)
    return socket.create_connection((address.hostname, address.port), timeout=SOCKET_TIMEOUT_S)


def test_connections_that_never_send_a_whole_request_head_are_closed(serve) -> None:
    """uvicorn closes an idle connection only after it answered a request: a socket opened and left
    silent (or cut inside its request head) stayed open for as long as its client kept it, each holding
    one of the service's file descriptors, so one client with enough sockets (no API key needed) left
    the service none to accept others, or to open files and database connections with."""
    with serve(service_request_head_timeout_s=1.0) as client:
        silent = connect(str(client.base_url))
        cut = connect(str(client.base_url))
        cut.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-ty")
        try:
            answered = client.post("/v1/chat/completions", json=CHAT)
            assert answered.status_code == 200, answered.text
            assert silent.recv(1024) == b""  # the service closed it
            assert cut.recv(1024) == b""
        finally:
            silent.close()
            cut.close()
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200


def send_raw(base_url: str, parts: Iterable[bytes]) -> bytes:
    """Send ``parts`` one after another on a new connection, stopping when the service hangs up on
    them; then what it answered."""
    with connect(base_url) as sock:
        try:
            for part in parts:
                sock.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered and hung up while we were still sending
        answer = b""
        try:
            while chunk := sock.recv(64 * 1024):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def test_a_request_head_over_the_cap_is_a_431_before_it_is_read_whole(serve) -> None:
    """httptools took a request head of any size, joining each new piece of a header value to all
    before it on the event loop: one client sending a 150 MiB header held that much memory and held
    every other request for seconds at a time (no API key needed: the key is read from the head)."""
    header_parts = [b"x-padding: "] + [b"a" * 64 * 1024] * 16  # a 1 MiB header
    with serve() as client:
        url = str(client.base_url)
        answer = send_raw(url, [b"GET /healthz HTTP/1.1\r\nhost: x\r\n", *header_parts, b"\r\n\r\n"])
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"over 65536 bytes" in answer
        # a large body is no large head: 1 MiB of messages reach the chat serving (which refuses them)
        long_messages = {**CHAT, "messages": [{"role": "user", "content": "refunds " * 128 * 1024}]}
        refused = client.post("/v1/chat/completions", json=long_messages)
        assert refused.json()["error"]["code"] == "context_length_exceeded", refused.text
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
