"""Free loopback ports for the servers our tests and benchmarks start (one home for the rule)."""

import random
import socket
from pathlib import Path

from evallens.settings import read_environment, set_process_environment

LOWEST_PORT = 20000
# "INDEX/COUNT", set by ``share_ports`` (or inherited from the process that started this one): this
# process draws from part INDEX of COUNT equal parts of the window
SHARE_VARIABLE = "EVALLENS_PORT_SHARE"
_handed_out: set[int] = set()


def _share() -> tuple[int, int]:
    """This process's part of the window: (index, count); the whole window, (0, 1), if none is set."""
    try:
        index, count = (int(part) for part in (read_environment(SHARE_VARIABLE) or "").split("/"))
    except ValueError:
        return (0, 1)
    return (index, count) if 0 <= index < count else (0, 1)


class NoFreePort(RuntimeError):
    """Every port tried between the lowest and the ephemeral range was taken."""


def ephemeral_ports_start() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def share_ports(index: int, count: int) -> None:
    """Draw this process's ports from part ``index`` of ``count`` equal parts of the window.

    Processes started side by side (pytest-xdist's workers) each remember only the ports they handed
    out themselves, and a probe-bind alone races: with a part each, they never draw the same port.
    The processes this one starts (a benchmark or the demo a test runs) inherit the part through
    ``EVALLENS_PORT_SHARE``.
    """
    if not 0 <= index < count:
        raise ValueError(f"no part {index} of {count}")
    set_process_environment({SHARE_VARIABLE: f"{index}/{count}"}, override=True)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now.

    Drawn below the kernel's ephemeral range: a port from ``bind(0)`` is one that every outgoing
    connection draws from too, so a server started seconds later could find it taken (a CI run lost
    the demo's service port that way). Each port is handed out once per process.
    """
    upper = ephemeral_ports_start()
    if upper <= LOWEST_PORT:  # an ephemeral range moved unusually low: keep a window of our own
        upper = LOWEST_PORT + 1000
    index, count = _share()
    width = (upper - LOWEST_PORT) // count
    lowest, upper = LOWEST_PORT + index * width, LOWEST_PORT + (index + 1) * width
    for _ in range(1000):
        port = random.randrange(lowest, upper)
        if port in _handed_out:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise NoFreePort(f"no free port in {lowest}-{upper}")
