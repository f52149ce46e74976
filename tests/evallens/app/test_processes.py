"""Child processes the demo and the collector benches start: healthy or a clear failure, stopped on exit."""

import sys
from pathlib import Path

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
