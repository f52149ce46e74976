"""Connections on the real stack (vLLM tiny model, uvicorn on a real socket, as `evallens service` runs
it): a client that opens connections and never sends a whole request head does not keep them."""

import socket
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
