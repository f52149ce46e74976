"""Free ports for the servers tests and benchmarks start: bindable, distinct, below the ephemeral range."""

import socket
import subprocess
import sys

import pytest

from evallens import ports
from evallens.ports import LOWEST_PORT, NoFreePort, ephemeral_ports_start, free_port, share_ports


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    drawn = [free_port() for _ in range(50)]
    assert len(set(drawn)) == len(drawn)
    assert all(LOWEST_PORT <= port < ephemeral_ports_start() for port in drawn)
    for port in drawn[:5]:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
            server.listen()


def bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_busy_port_is_skipped_and_a_port_is_handed_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    low = next(
        port
        for port in range(LOWEST_PORT, ephemeral_ports_start() - 1)
        if bindable(port) and bindable(port + 1) and {port, port + 1}.isdisjoint(ports._handed_out)
    )
    # a window of two ports, all of it this process's (an xdist worker draws from a part): the
    # first busy, the second free
    monkeypatch.setenv(ports.SHARE_VARIABLE, "0/1")
    monkeypatch.setattr(ports, "LOWEST_PORT", low)
    monkeypatch.setattr(ports, "ephemeral_ports_start", lambda: low + 2)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", low))
        busy.listen()
        assert free_port() == low + 1
        with pytest.raises(NoFreePort, match=f"no free port in {low}-{low + 2}"):
            free_port()


def test_processes_sharing_the_window_draw_from_disjoint_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    middle = (LOWEST_PORT + ephemeral_ports_start()) // 2
    monkeypatch.setenv(ports.SHARE_VARIABLE, "0/1")  # restored after the test
    share_ports(0, 2)
    assert all(LOWEST_PORT <= free_port() < middle for _ in range(30))
    share_ports(1, 2)
    assert all(middle <= free_port() < ephemeral_ports_start() for _ in range(30))
    with pytest.raises(ValueError, match="no part 2 of 2"):
        share_ports(2, 2)


def test_a_process_started_after_sharing_draws_from_its_parents_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """A benchmark or demo a test worker starts must not draw from the other worker's part."""
    middle = (LOWEST_PORT + ephemeral_ports_start()) // 2
    monkeypatch.setenv(ports.SHARE_VARIABLE, "0/1")
    share_ports(1, 2)
    draw = "from evallens.ports import free_port\nfor _ in range(30): print(free_port())"
    child = subprocess.run([sys.executable, "-c", draw], capture_output=True, text=True, check=True)
    drawn = [int(line) for line in child.stdout.split()]
    assert len(drawn) == 30
    assert all(middle <= port < ephemeral_ports_start() for port in drawn), drawn


@pytest.mark.parametrize("inherited", ["", "2/2", "one/two", "1/2/3"])
def test_an_unusable_inherited_share_means_the_whole_window(
    monkeypatch: pytest.MonkeyPatch, inherited: str
) -> None:
    monkeypatch.setenv(ports.SHARE_VARIABLE, inherited)
    assert ports._share() == (0, 1)
    monkeypatch.setenv(ports.SHARE_VARIABLE, "1/2")
    assert ports._share() == (1, 2)
