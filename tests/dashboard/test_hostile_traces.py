"""What a hostile trace sender puts in its spans never breaks a page or changes what it shows.

Spans go through the real collector, as any OTLP client's would.
"""

import time
from pathlib import Path

import httpx
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from collector.runtime import Collector
from tests.collector.conftest import collector_settings, make_request, make_span
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import Seeded

TRACE_ID = b"\x0e" * 16


def send(database_url: str, data_dir: Path, spans: list[Span]) -> None:
    """Export ``spans`` to a collector writing into ``database_url`` and wait until they are stored."""
    collector = Collector(collector_settings(database_url, data_dir), database_url)
    collector.start_in_background()
    try:
        response = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=make_request(spans).SerializeToString(),
            headers={"content-type": "application/x-protobuf"},
        )
        assert response.status_code == 200
    finally:
        collector.stop()


def test_a_span_id_sent_twice_opens_both(app_database: str, seeded: Seeded, tmp_path: Path) -> None:
    start = time.time_ns() - 60 * 10**9
    first = make_span(8000, trace_id=TRACE_ID, start_ns=start)
    twin = make_span(8000, trace_id=TRACE_ID, start_ns=start + 10**6, duration_ns=7 * 10**6)
    twin.name = "twin"
    send(app_database, tmp_path, [first, twin])
    app = open_page("app_pages/traces.py", trace_id=TRACE_ID.hex())  # fails on any exception
    span_box = next(box for box in app.selectbox if box.label == "Span")
    assert len(span_box.options) == 2  # both are stored: the key includes the start time
    span_box.select_index(1).run()
    assert not app.exception, [exception.value for exception in app.exception]
    assert "**twin**" in [markdown.value for markdown in app.markdown]
    facts = app.table[0].value
    assert dict(zip(facts["attribute"], facts["value"], strict=True))["duration (ms)"] == "7.0"
