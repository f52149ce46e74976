"""Fixtures: a dashboard pointed at a fresh database, empty or seeded with runs, traces and metrics."""

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO_ROOT
from tests.dashboard.seed import Seeded, seed

APP_FILE = str(
    REPO_ROOT / "platform" / "evallens" / "app" / "streamlit_app.py"
)  # what `evallens dashboard` runs
DASHBOARD_DIR = REPO_ROOT / "dashboard"
TIMEOUT_S = 180  # the first Cases page of a process loads MiniLM: slow on a busy 2-core machine


@pytest.fixture
def app_database(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A migrated, empty database that the dashboard reads through ``EVALLENS_DATABASE_URL``."""
    monkeypatch.setenv("EVALLENS_DATABASE_URL", database_url)
    monkeypatch.delenv("EVALLENS_DASHBOARD_PASSWORD", raising=False)
    # no background embedding: each view embeds what it needs (its own test turns it on)
    monkeypatch.setenv("EVALLENS_DASHBOARD_EMBED_AHEAD_S", "0")
    st.cache_data.clear()
    st.cache_resource.clear()
    yield database_url
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def seeded(app_database: str) -> Seeded:
    """The app database filled by ``tests.dashboard.seed``."""
    return seed(app_database)


def page_file(page: str) -> str:
    """The file of a dashboard page (``app_pages/compare.py``) as the app's navigation knows it."""
    return str(DASHBOARD_DIR / page)


def open_page(page: str | None = None, **query_params: str) -> AppTest:
    """Run the app, switch to ``page`` (e.g. ``app_pages/compare.py``) and return the rendered result."""
    app = AppTest.from_file(APP_FILE, default_timeout=TIMEOUT_S)
    app.query_params.update(query_params)
    app.run()
    if page is not None:
        app.switch_page(page_file(page)).run()
    assert not app.exception, [exception.value for exception in app.exception]
    return app


@contextlib.contextmanager
def streamlit_serving(command: list[str], url: str, **popen: Any) -> Iterator[None]:
    """``command`` (Streamlit, or the CLI that starts it) in its own process group until it answers
    ``url``'s health check; on the way out SIGTERM, then SIGKILL to what is left of the group."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, **popen
    )
    try:
        deadline = time.monotonic() + 120
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"{command} did not start:\n{process.communicate()[0]}")
            time.sleep(0.5)
        yield
    finally:
        if process.poll() is None:
            process.terminate()  # the CLI forwards this to Streamlit
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # only this test's own process group
        process.communicate()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return bool(response.read() == b"ok")
    except OSError:
        return False
