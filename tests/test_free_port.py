"""The tests' free ports: bindable, distinct, and never from the range outgoing connections use."""

import socket

from tests.conftest import LOWEST_TEST_PORT, ephemeral_ports_start, free_port


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(LOWEST_TEST_PORT <= port < ephemeral_ports_start() for port in ports)
    for port in ports[:5]:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
            server.listen()
