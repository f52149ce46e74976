"""What a hostile or careless client found after issue 14: each case answered with a clear status,
nothing good in the same request lost, and the collector still taking an honest client's data."""

import secrets

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

from collector.runtime import Collector
from tests.collector.conftest import fetch_spans, make_request, make_span
from tests.collector.test_genai_content import QUESTION, log_record, logs_request, stored_content
from tests.collector.test_transports import TRANSPORTS

PROTOBUF = {"content-type": "application/x-protobuf"}


def test_a_log_event_postgres_refuses_is_rejected_not_retried_forever(
    running_collector: Collector, database_url: str
) -> None:
    """An event name too long for the unique index is SQLSTATE 54000, which psycopg raises as the
    OperationalError class of a lost connection: it must read as a bad record, not as an outage."""
    trace_id, span_id = (12).to_bytes(16, "big"), (1).to_bytes(8, "big")
    poison_name = f"gen_ai.{secrets.token_hex(4000)}.message"  # incompressible: no btree row holds it
    poison = log_record(poison_name, {"content": "hi"}, trace_id, span_id)
    good = log_record("gen_ai.user.message", {"content": QUESTION}, trace_id, span_id)
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=logs_request([poison, good]).SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200, answer.text
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 1 and "54000" in partial.error_message
    assert [row["event_name"] for row in stored_content(database_url)] == ["gen_ai.user.message"]
    # the collector still takes an honest client's spans
    honest = TRANSPORTS["http-protobuf"](running_collector, make_request([make_span(5)]), {})
    assert honest.ok and len(fetch_spans(database_url)) == 1
