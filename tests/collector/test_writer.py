"""Finding 2 of issue 14: the writer cannot die quietly, and two collectors never share one spool."""

import logging
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from collector.runtime import Collector
from evallens.errors import EvallensError
from evallens.ports import free_port
from evallens.settings import child_environment
from tests.collector.conftest import (
    collector_settings,
    count_spans,
    make_request,
    make_span,
    start_collector_process,
)
from tests.conftest import REPO_ROOT

PROTOBUF = {"content-type": "application/x-protobuf"}


def test_second_collector_on_the_same_spool_refuses_in_one_line(database_url: str, tmp_path: Path) -> None:
    port = free_port()
    first = start_collector_process(database_url, tmp_path, port)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "evallens", "collector"],
            cwd=REPO_ROOT,
            env=child_environment(
                {
                    "EVALLENS_DATABASE_URL": database_url,
                    "EVALLENS_DATA_DIR": str(tmp_path),
                    "EVALLENS_COLLECTOR_HTTP_PORT": str(free_port()),
                    "EVALLENS_COLLECTOR_GRPC_ENABLED": "false",
                }
            ),
            capture_output=True,
            text=True,
            timeout=60,  # a second collector that starts serves forever: the test fails here
        )
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "in use by another collector" in lines[0], second.stderr
        assert f"pid {first.pid}" in lines[0]
        # the first one is unaffected
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["ok"] is True
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(60) == 0


def test_second_collector_in_one_process_refuses(
    database_url: str, tmp_path: Path, make_collector: Callable[..., Collector]
) -> None:
    settings = collector_settings(database_url, tmp_path / "shared")
    first = Collector(settings, database_url)
    try:
        with pytest.raises(EvallensError, match="in use by another collector"):
            Collector(settings, database_url)
        # its own spool directory is fine
        make_collector(database_url, collector_spool_dir=tmp_path / "own")
    finally:
        first.stop()


class FailingOnce:
    """Stands in for one of the writer's metrics and raises on its first use: the one kind of fault no
    input can cause any more (two writers on one spool used to race into a ``FileNotFoundError``)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped, self.failed = wrapped, False

    def observe(self, value: float) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("a bug in the writer")
        self.wrapped.observe(value)


def test_writer_failure_is_logged_restarted_and_unhealthy_meanwhile(
    database_url: str, make_collector: Callable[..., Collector], caplog: pytest.LogCaptureFixture
) -> None:
    running = make_collector(database_url, collector_writer_backoff_s=3.0)
    running.stats.flush_seconds = FailingOnce(running.stats.flush_seconds)
    base = f"http://127.0.0.1:{running.http_port}"
    body = make_request([make_span(i) for i in range(5)]).SerializeToString()
    with caplog.at_level(logging.ERROR, logger="collector.pipeline"):
        failed = httpx.post(f"{base}/v1/traces", content=body, headers=PROTOBUF, timeout=20)
        assert failed.status_code == 503  # never acknowledged: the client resends
        health = httpx.get(f"{base}/healthz")
        assert health.status_code == 503 and health.json()["writer_running"] is False
        assert httpx.post(f"{base}/v1/traces", content=body, headers=PROTOBUF).status_code == 503
    (record,) = [r for r in caplog.records if "writer failed" in r.getMessage()]
    assert record.exc_info is not None and "a bug in the writer" in str(record.exc_info[1])

    deadline = time.monotonic() + 30
    while httpx.get(f"{base}/healthz").status_code != 200:
        assert time.monotonic() < deadline, "the writer did not come back"
        time.sleep(0.1)
    assert httpx.post(f"{base}/v1/traces", content=body, headers=PROTOBUF).status_code == 200
    assert count_spans(database_url) == 5
    assert "evallens_collector_writer_restarts_total 1.0" in httpx.get(f"{base}/metrics").text
