"""A headless chromium driven over the DevTools protocol: open a page, wait for Streamlit, screenshot it."""

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

from tests.conftest import REPO_ROOT

INSTALL_SCRIPT = REPO_ROOT / "tests" / "dashboard" / "install_chromium.sh"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
    "--window-size=1400,1000",
]
# Streamlit renders a failed script as stException and st.error as an error alert.
PAGE_STATE_JS = """(() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const status = document.querySelector('[data-testid="stStatusWidget"]');
  const boxes = '[data-testid="stException"], [data-testid="stAlertContentError"]';
  const errors = [...document.querySelectorAll(boxes)]
    .map(e => e.innerText.slice(0, 500));
  return JSON.stringify({
    rendered: !!main && main.innerText.trim().length > 0,
    running: (!!status && /running/i.test(status.innerText))
      || document.querySelectorAll('[data-testid="stSpinner"]').length > 0,
    skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length,
    charts: document.querySelectorAll('.vega-embed').length,
    tables: document.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"]').length,
    tiles: document.querySelectorAll('[data-testid="stMetric"]').length,
    not_found: /page not found/i.test(document.body ? document.body.innerText : ''),
    errors: errors,
    heading: (document.querySelector('h1') || {innerText: ''}).innerText,
    dialogs: [...document.querySelectorAll('[role="dialog"]')].map(e => e.innerText.slice(0, 300)),
    height: (document.querySelector('[data-testid="stMain"]') || document.body).scrollHeight,
  });
})()"""


def ensure_chromium() -> str:
    """The chromium executable, installed with apt-get by ``install_chromium.sh`` when missing."""
    result = subprocess.run(["sh", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900)
    path = shutil.which("chromium")
    if result.returncode != 0 or path is None:
        raise RuntimeError(f"could not install chromium:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return path


@dataclass
class PageState:
    """What a rendered page showed."""

    heading: str
    errors: list[str]
    dialogs: list[str]
    charts: int
    height: int
    tables: int = 0
    tiles: int = 0
    not_found: bool = False


class Tab:
    """One browser tab spoken to over its DevTools websocket."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self.ids)
        self.socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.socket.recv(timeout=60))
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def state(self) -> dict[str, Any]:
        result = self.call("Runtime.evaluate", expression=PAGE_STATE_JS, returnByValue=True)
        if "value" not in result["result"]:  # the script threw: the document is between two pages
            return {"rendered": False, "running": True, "skeletons": 0}
        return dict(json.loads(result["result"]["value"]))

    def open(self, url: str, timeout_s: float = 240.0) -> PageState:
        """Navigate and wait until Streamlit has finished running the page and stays still."""
        self.call("Page.navigate", url=url)
        deadline, calm = time.monotonic() + timeout_s, 0
        state: dict[str, Any] = {}
        while time.monotonic() < deadline and calm < 4:
            time.sleep(0.5)
            state = self.state()
            ready = state["rendered"] and not state["running"] and state["skeletons"] == 0
            calm = calm + 1 if ready else 0
        if calm < 4:
            raise TimeoutError(f"{url} did not finish rendering: {state}")
        return self.shown()

    def shown(self) -> PageState:
        """What the page shows now (after a screenshot, charts below the fold have rendered too)."""
        state = self.state()
        return PageState(
            state["heading"],
            list(state["errors"]),
            list(state["dialogs"]),
            int(state["charts"]),
            int(state["height"]),
            int(state["tables"]),
            int(state["tiles"]),
            bool(state["not_found"]),
        )

    def screenshot(self, path: Path, height: int) -> None:
        """Save the page as a PNG, tall enough to show the whole scrolled content."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=1400,
            height=min(max(height, 900), 6000),
            deviceScaleFactor=1,
            mobile=False,
        )
        time.sleep(1.0)  # let the charts re-lay out at the new size
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        self.call("Emulation.clearDeviceMetricsOverride")


@contextmanager
def chromium_tab(executable: str) -> Iterator[Tab]:
    """A fresh headless chromium (own profile directory) and its first tab."""
    # chromium's helper processes (renderer, crashpad) can still be writing into the profile just
    # after the browser exits: stop the whole process group, and never fail a test on a leftover file
    with tempfile.TemporaryDirectory(prefix="evallens-chromium-", ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 60
            while not port_file.exists() or not port_file.read_text().strip():
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("chromium did not open its DevTools port")
                time.sleep(0.2)
            port = port_file.read_text().split()[0]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                targets = json.load(response)
            page = next(target for target in targets if target["type"] == "page")
            with connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30) as socket:
                tab = Tab(socket)
                tab.call("Page.enable")
                tab.call("Runtime.enable")
                yield tab
        finally:
            _stop_group(process)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # helpers that outlived the browser
