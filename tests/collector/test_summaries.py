"""Through the real collector: a trace sent in several requests, out of order, resent, and with a span
PostgreSQL refuses, has the summary its stored spans fold to (the spans trigger of migration 0006)."""

import time
from collections.abc import Callable

import httpx
import psycopg

from collector.runtime import Collector
from evallens.telemetry import attributes as names
from tests.collector.conftest import make_request, make_span
from tests.collector.test_poison import add_blob_index, poison_attributes

PROTOBUF = {"content-type": "application/x-protobuf"}
TRACE = (7).to_bytes(16, "big")
ROOT = (1).to_bytes(8, "big")


def post(base: str, spans: list[object]) -> None:
    body = make_request(spans).SerializeToString()  # type: ignore[arg-type]
    assert httpx.post(f"{base}/v1/traces", content=body, headers=PROTOBUF).status_code == 200


def test_trace_in_pieces_out_of_order_with_resend_and_poison(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    add_blob_index(database_url)
    collector = make_collector(database_url)
    base = f"http://127.0.0.1:{collector.http_port}"
    t0 = time.time_ns() - 60_000_000_000
    chat = make_span(
        2,
        trace_id=TRACE,
        parent=ROOT,
        start_ns=t0 + 10_000_000,
        attributes={
            names.GEN_AI_REQUEST_MODEL: "smollm2",
            names.GEN_AI_USAGE_INPUT_TOKENS: 100,
            names.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
            names.TENANT: "acme",
        },
    )
    early = make_span(
        3, trace_id=TRACE, parent=ROOT, start_ns=t0 - 5_000_000, attributes={names.DEGRADED: True}
    )
    root = make_span(0, trace_id=TRACE, start_ns=t0, duration_ns=900_000_000)
    root.status.code = root.status.STATUS_CODE_ERROR
    poison = make_span(4, trace_id=TRACE, parent=ROOT, start_ns=t0, attributes=poison_attributes())

    post(base, [chat])  # a child first
    post(base, [root, poison])  # then the root, beside a span PostgreSQL refuses
    post(base, [early, chat])  # an earlier span, and a resend of the child
    post(base, [root])  # the root again

    with psycopg.connect(database_url) as connection:
        row = connection.execute(
            "SELECT num_spans, start_time, latency_ms, error, model, tenant, input_tokens, output_tokens,"
            " degraded FROM trace_summaries WHERE trace_id = %s",
            (TRACE.hex(),),
        ).fetchone()
        earliest = connection.execute("SELECT min(start_time) FROM spans").fetchone()
    assert row is not None and earliest is not None
    num_spans, start_time, latency_ms, error, model, tenant, input_tokens, output_tokens, degraded = row
    assert num_spans == 3  # root, chat, early; not the quarantined span, nothing twice
    assert start_time == earliest[0]
    assert latency_ms == 900.0 and error and degraded
    assert (model, tenant, input_tokens, output_tokens) == ("smollm2", "acme", 100, 20)
