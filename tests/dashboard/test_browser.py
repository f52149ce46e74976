"""A real headless chromium opens every page of a running ``evallens dashboard`` and screenshots it."""

import json
import sys
from collections.abc import Iterator

import pytest

from evallens.ports import free_port
from tests.conftest import REPO_ROOT
from tests.dashboard.browser import chromium_tab, ensure_chromium
from tests.dashboard.conftest import streamlit_serving
from tests.dashboard.seed import Seeded, request_trace
from tests.dashboard.test_hostile_traces import HOSTILE, SHOWN

SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"  # kept after the run (CI uploads the folder)
# url path -> (heading, at least this many charts, tables, metric tiles) with the seeded data
PAGES = {
    "": ("Overview", 3, 0, 3),
    "overview": ("Overview", 3, 0, 3),  # the default page by its own name too
    "compare": ("Compare runs", 1, 2, 0),
    "traces": ("Traces", 1, 1, 0),  # the newest trace opens with its waterfall
    "serving": ("Serving metrics", 5, 0, 0),
    "cases": ("Cases", 0, 1, 0),
    "quarantine": ("Quarantine", 0, 0, 0),
}


@pytest.fixture
def dashboard_url(seeded: Seeded, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``evallens dashboard`` on a free port, reading the seeded database."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "evallens", "dashboard", "--port", str(port)]
    with streamlit_serving(command, url, cwd=REPO_ROOT):
        yield url


@pytest.mark.slow
def test_every_page_opens_by_url_and_shows_its_data(dashboard_url: str, seeded: Seeded) -> None:
    executable = ensure_chromium()
    failures = []
    with chromium_tab(executable) as tab:
        for path, (heading, charts, tables, tiles) in PAGES.items():
            state = tab.open(f"{dashboard_url}/{path}")
            tab.screenshot(SCREENSHOTS / f"{path or 'root'}.png", state.height)
            state = tab.shown()  # the whole page was laid out for the screenshot
            shown = (state.heading, state.charts >= charts, state.tables >= tables, state.tiles >= tiles)
            if state.errors or state.dialogs or state.not_found or shown != (heading, True, True, True):
                failures.append((path, state))
        state = tab.open(f"{dashboard_url}/traces?trace_id={seeded.error_trace}&window=24h")
        tab.screenshot(SCREENSHOTS / "trace.png", state.height)
        state = tab.shown()
        assert state.charts >= 1 and state.tables >= 2 and not state.errors
        assert tab.open(f"{dashboard_url}/no-such-page").not_found  # the check above can fail
    assert failures == []
    assert {f"{path or 'root'}.png" for path in PAGES} <= {shot.name for shot in SCREENSHOTS.glob("*.png")}


# what the trace's span name and attributes drew in the main area, besides text
HOSTILE_JS = """(() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  return JSON.stringify({
    images: main.querySelectorAll('img').length,
    formulas: main.querySelectorAll('.katex').length,
    links: [...main.querySelectorAll('a')].map(a => a.innerText).filter(t => /sign in|pixel/.test(t)),
    headings: [...main.querySelectorAll('h1, h2, h3')].map(h => h.innerText.trim()),
    badges: [...main.querySelectorAll('span')].filter(s => s.innerText === 'PASS').length,
    text: main.innerText,
    overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  });
})()"""


@pytest.mark.slow
def test_markdown_in_a_trace_is_shown_as_text_in_the_browser(
    dashboard_url: str, seeded: Seeded, app_database: str
) -> None:
    from sqlalchemy.orm import Session

    from evallens.db import create_db_engine
    from evallens.telemetry import attributes as attr

    trace_id = "e" * 32
    spans = request_trace(trace_id, 700, seeded.now, question="hello")
    spans[0].name = HOSTILE + " " + "x" * 2000  # and a long unbroken word
    spans[0].attributes = {**spans[0].attributes, attr.DEGRADED_REASON: HOSTILE}
    engine = create_db_engine(app_database)
    try:
        with Session(engine) as db, db.begin():
            db.add_all(spans)
    finally:
        engine.dispose()
    executable = ensure_chromium()
    with chromium_tab(executable) as tab:
        state = tab.open(f"{dashboard_url}/traces?trace_id={trace_id}&window=24h")
        tab.screenshot(SCREENSHOTS / "hostile_trace.png", state.height)
        result = tab.call("Runtime.evaluate", expression=HOSTILE_JS, returnByValue=True)
    shown = json.loads(result["result"]["value"])
    assert (shown["images"], shown["formulas"], shown["links"], shown["badges"]) == (0, 0, [], 0)
    assert shown["headings"] == ["Traces", f"Trace {trace_id}"]
    assert SHOWN in shown["text"] and shown["overflow"] <= 0  # the text as sent; long words wrap
