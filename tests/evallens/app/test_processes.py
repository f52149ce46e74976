"""Child processes the demo and the collector benches start: healthy or a clear failure, stopped on exit."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from evallens.app.demo.processes import ManagedProcess, ProcessFailed, healthy
from evallens.ports import free_port


def http_server(tmp_path: Path, port: int) -> ManagedProcess:
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(tmp_path)]
    return ManagedProcess("web", command, tmp_path / "web.log")


def test_a_child_that_dies_at_start_fails_at_once_naming_its_code_and_log(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import sys; print('port already in use'); sys.exit(3)"]
    child = ManagedProcess("collector", command, tmp_path / "collector.log")
    url = f"http://127.0.0.1:{free_port()}/healthz"
    with pytest.raises(ProcessFailed) as failure, healthy(child, url, timeout_s=600):
        pytest.fail("a dead child is never healthy")
    assert str(failure.value) == f"collector exited with code 3; see {tmp_path / 'collector.log'}"
    assert "port already in use" in (tmp_path / "collector.log").read_text()


def test_a_child_that_never_answers_fails_after_the_timeout_and_is_stopped(tmp_path: Path) -> None:
    child = ManagedProcess(
        "sleeper", [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "s.log"
    )
    url = f"http://127.0.0.1:{free_port()}/healthz"
    with (
        pytest.raises(ProcessFailed, match=r"sleeper was not healthy at .* after 1 s"),
        healthy(child, url, 1),
    ):
        pytest.fail("a silent child is never healthy")
    assert child.process is not None and child.process.poll() is not None


def test_a_healthy_child_runs_inside_the_block_and_is_stopped_after_it(tmp_path: Path) -> None:
    port = free_port()
    with healthy(http_server(tmp_path, port), f"http://127.0.0.1:{port}/", 120) as child:
        assert child.running
        assert child.process is not None and child.pid == child.process.pid
    assert not child.running


def test_an_error_inside_the_block_still_stops_the_child(tmp_path: Path) -> None:
    port = free_port()
    child = http_server(tmp_path, port)
    with pytest.raises(RuntimeError, match="bench failed"), healthy(child, f"http://127.0.0.1:{port}/", 120):
        raise RuntimeError("bench failed")
    assert not child.running


def test_an_unstarted_child_has_no_pid(tmp_path: Path) -> None:
    with pytest.raises(ProcessFailed, match="web is not started"):
        _ = http_server(tmp_path, free_port()).pid


# Stopping a child that has children of its own (`vllm serve` and the service each spawn an engine core).


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie does not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def started_with_grandchild(
    tmp_path: Path, script: str, *, stop_group: bool, before: str = ""
) -> tuple[ManagedProcess, int]:
    """A shell that runs ``before``, starts ``sleep 300`` and prints its pid, then runs ``script``: the
    child and the grandchild's pid, once the grandchild runs (and ``before`` has run)."""
    log_path = tmp_path / "shell.log"
    command = ["sh", "-c", f"{before}sleep 300 & echo $!; {script}"]
    child = ManagedProcess("shell", command, log_path, stop_group=stop_group)
    child.start()
    wait_until(lambda: log_path.read_text().endswith("\n"), "the shell printed its grandchild's pid")
    return child, int(log_path.read_text())


def test_stopping_the_group_stops_what_the_child_started(tmp_path: Path) -> None:
    child, grandchild = started_with_grandchild(tmp_path, "wait", stop_group=True)
    child.stop()
    assert not child.running and not running(grandchild)
    with pytest.raises(ProcessLookupError):
        os.killpg(child.pid, 0)


def test_stopping_only_the_child_leaves_its_children_running(tmp_path: Path) -> None:
    child, grandchild = started_with_grandchild(tmp_path, "wait", stop_group=False)
    try:
        child.stop()
        assert not child.running
        assert running(grandchild)  # the demo's default: its children stop their own
    finally:
        os.killpg(child.pid, signal.SIGKILL)


def test_a_group_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    # the trap is set before the pid is printed, so the stop below cannot come before it
    child, grandchild = started_with_grandchild(tmp_path, "wait", stop_group=True, before="trap '' TERM; ")
    child.stop(timeout_s=0.5)
    assert child.process is not None and child.process.returncode == -signal.SIGKILL
    assert not running(grandchild)


def test_the_group_is_stopped_even_after_the_child_itself_exited(tmp_path: Path) -> None:
    child, grandchild = started_with_grandchild(tmp_path, "exit 0", stop_group=True)
    wait_until(lambda: not child.running, "the shell exited")
    child.stop()
    assert not running(grandchild)


# The child records SIGTERM in the file its first argument names, once its handler is set says "ready".
CHILD = """
import signal, sys, time
from pathlib import Path

def record(*_: object) -> None:
    Path(sys.argv[1]).write_text("SIGTERM")
    sys.exit(0)

signal.signal(signal.SIGTERM, record)
print("ready", flush=True)
time.sleep(300)
"""

# The middle process starts the child with die_with_parent, prints the child's pid and waits to be killed.
MIDDLE = """
import sys, time
from pathlib import Path
from evallens.app.demo.processes import ManagedProcess

child_script, marker, log = sys.argv[1:]
command = [sys.executable, "-c", child_script, marker]
child = ManagedProcess("child", command, Path(log), die_with_parent=True)
child.start()
print(child.pid, flush=True)
time.sleep(300)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="a parent-death signal is Linux's")
def test_a_child_that_dies_with_its_parent_gets_sigterm_when_the_parent_is_killed(tmp_path: Path) -> None:
    marker, log = tmp_path / "sigterm", tmp_path / "child.log"
    middle = subprocess.Popen(
        [sys.executable, "-c", MIDDLE, CHILD, str(marker), str(log)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert middle.stdout is not None
    with middle.stdout:
        child = int(middle.stdout.readline())
    try:
        wait_until(lambda: log.exists() and log.read_text() == "ready\n", "the child set its SIGTERM handler")
        middle.kill()
        middle.wait()
        # the handler creates the file before it writes to it: wait for the word, not the file
        wait_until(lambda: marker.exists() and marker.read_text() == "SIGTERM", "the child got SIGTERM")
    finally:
        if running(child):
            os.kill(child, signal.SIGKILL)
