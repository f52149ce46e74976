"""Finding 4 of issue 14: one client's absurd values never break a page for the whole project.

Two spans of one trace claiming ``evallens.cost_usd = 1e308`` (their sum overflows a double) and one
ending at 2^64-1 ns go through the real collector; every page still renders, with the data it has.
"""

import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from collector.runtime import Collector
from evallens.telemetry import attributes as names
from tests.collector.conftest import collector_settings, make_request, make_span
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import Seeded

PAGES = ["app_pages/overview.py", "app_pages/traces.py", "app_pages/cases.py", "app_pages/serving.py"]


def test_pages_render_after_a_client_sent_absurd_values(
    app_database: str, seeded: Seeded, tmp_path: Path
) -> None:
    collector = Collector(collector_settings(app_database, tmp_path), app_database)
    collector.start_in_background()
    try:
        trace_id = b"\x0f" * 16
        start = time.time_ns() - 60 * 10**9
        root = make_span(7000, trace_id=trace_id, start_ns=start, attributes={names.COST_USD: 1e308})
        root.status.code = Status.STATUS_CODE_ERROR  # an error, so it is a "bad case" on the Cases page too
        child = make_span(
            7001, trace_id=trace_id, start_ns=start, parent=root.span_id, attributes={names.COST_USD: 1e308}
        )
        forever = make_span(7002, trace_id=trace_id, start_ns=start, parent=root.span_id)
        forever.end_time_unix_nano = 2**64 - 1
        plain = make_span(7003, trace_id=trace_id, start_ns=start, parent=root.span_id)
        body = make_request([root, child, forever, plain]).SerializeToString()
        response = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=body,
            headers={"content-type": "application/x-protobuf"},
        )
        assert response.status_code == 200
    finally:
        collector.stop()
    for page in PAGES:
        app = open_page(page)  # fails on any exception the page raised
        assert not app.error, (page, [error.value for error in app.error])
    traces = open_page("app_pages/traces.py").dataframe[0].value
    assert trace_id.hex() in set(traces["trace_id"])  # the span the collector took is shown
    # the absurd ones were refused before they were acknowledged, saying why
    assert ExportTraceServiceResponse.FromString(response.content).partial_success.rejected_spans == 3
