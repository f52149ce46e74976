"""Validate before acknowledging (issue 14, findings 1 and 4): bounded keys and text, finite bounded
numbers, plausible times. What is refused is said in ``partial_success``; what is cut is marked."""

import time
from typing import Any

import httpx
import psycopg
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.runtime import Collector
from collector.validate import TRUNCATED
from evallens.telemetry import attributes as names
from tests.collector.conftest import fetch_spans, make_request, make_span
from tests.collector.test_transports import TRANSPORTS

PROTOBUF = {"content-type": "application/x-protobuf"}
U64_MAX = 2**64 - 1


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def post(collector: Collector, body: bytes) -> ExportTraceServiceResponse:
    response = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=body, headers=PROTOBUF)
    assert response.status_code == 200, response.content
    return ExportTraceServiceResponse.FromString(response.content)


REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "cost 1e308": ({names.COST_USD: 1e308}, "evallens.cost_usd must be a number from 0 to 1e+06"),
    "cost inf": ({names.COST_USD: float("inf")}, "evallens.cost_usd must be a number"),
    "negative cost": ({names.COST_USD: -0.5}, "evallens.cost_usd must be a number"),
    "cost text": ({names.COST_USD: "lots"}, "evallens.cost_usd must be a number"),
    "negative tokens": ({names.GEN_AI_USAGE_INPUT_TOKENS: -3}, "gen_ai.usage.input_tokens must be a whole"),
    "tokens 1e12": ({names.GEN_AI_USAGE_INPUT_TOKENS: 10**12}, "gen_ai.usage.input_tokens must be a whole"),
    # str.isdigit() takes these, int() does not: the fuzz test found a 500 for the first
    "tokens '³'": ({names.GEN_AI_USAGE_INPUT_TOKENS: "³"}, "gen_ai.usage.input_tokens must be a whole"),
    "tokens of 5,000 digits": (
        {names.GEN_AI_USAGE_INPUT_TOKENS: "9" * 5000},
        "gen_ai.usage.input_tokens must be a whole",
    ),
    "8,000-char run id": ({names.EVAL_RUN_ID: "r" * 8000}, "evallens.eval.run_id is 8000 characters long"),
    "8,000-char tenant": ({names.TENANT: "t" * 8000}, "evallens.tenant is 8000 characters long"),
    "8,000-char model": ({names.GEN_AI_REQUEST_MODEL: "m" * 8000}, "gen_ai.request.model is 8000 characters"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_values_that_cannot_be_stored_sanely_are_rejected_with_a_reason(
    running_collector: Collector, database_url: str, case: str
) -> None:
    attributes, reason = REFUSED[case]
    request = make_request([make_span(0), make_span(1, attributes=attributes), make_span(2)])
    partial = post(running_collector, request.SerializeToString()).partial_success
    assert partial.rejected_spans == 1 and reason in partial.error_message, partial.error_message
    assert sorted(row["name"] for row in fetch_spans(database_url)) == ["span-0", "span-2"]


def test_absurd_end_times_are_rejected(running_collector: Collector, database_url: str) -> None:
    forever = make_span(0)
    forever.end_time_unix_nano = U64_MAX
    eight_days = make_span(1, duration_ns=8 * 86_400 * 10**9)
    six_days = make_span(2, start_ns=time.time_ns() - 6 * 86_400 * 10**9, duration_ns=6 * 86_400 * 10**9 - 10)
    partial = post(running_collector, make_request([forever, eight_days, six_days]).SerializeToString())
    assert partial.partial_success.rejected_spans == 2
    assert "lasts" in partial.partial_success.error_message
    (row,) = fetch_spans(database_url)
    assert row["name"] == "span-2" and row["duration_ms"] < 6 * 86_400 * 1000


def test_a_resource_with_an_oversized_tenant_rejects_its_spans(
    running_collector: Collector, database_url: str
) -> None:
    request = make_request(
        [make_span(0), make_span(1)], resource={"service.name": "svc", names.TENANT: "x" * 300}
    )
    partial = post(running_collector, request.SerializeToString()).partial_success
    assert (
        partial.rejected_spans == 2 and "resource evallens.tenant is 300 characters" in partial.error_message
    )
    assert fetch_spans(database_url) == []


def test_free_text_is_cut_with_a_marker_and_kept_whole_nowhere_else(
    running_collector: Collector, database_url: str
) -> None:
    span = make_span(0, attributes={"db.statement": "SELECT " + "x" * 5000})
    span.name = "n" * 5000
    span.status.message = "boom " * 1000
    request = make_request([span], resource={"service.name": "s" * 3000})
    assert not post(running_collector, request.SerializeToString()).HasField("partial_success")
    (row,) = fetch_spans(database_url)
    assert len(row["name"]) == 1024 and row["name"].endswith(TRUNCATED)
    assert len(row["status_message"]) == 1024 and row["status_message"].endswith(TRUNCATED)
    assert len(row["service_name"]) == 1024
    assert len(row["attributes"]["db.statement"]) == 5007  # attribute values are kept whole in JSON


def test_bounded_values_and_numeric_strings_are_accepted(
    running_collector: Collector, database_url: str
) -> None:
    attributes = {
        names.COST_USD: "0.25",
        names.GEN_AI_USAGE_INPUT_TOKENS: "1000",
        names.GEN_AI_USAGE_OUTPUT_TOKENS: 12.0,
        names.EVAL_RUN_ID: "r" * 256,
    }
    assert not post(
        running_collector, make_request([make_span(0, attributes=attributes)]).SerializeToString()
    ).HasField("partial_success")
    (row,) = fetch_spans(database_url)
    assert (row["cost_usd"], row["input_tokens"], row["output_tokens"]) == (0.25, 1000, 12)
    assert row["eval_run_id"] == "r" * 256


# float() and int() read these as numbers; a client writing one did not write a number as JSON does
UNREADABLE_NUMBER_TEXT = {
    names.COST_USD: ["1_000", " 0.5", "0.5\n", "+1", ".5", "5.", "00.5", "١٢", "０.５", "Infinity", "nan"],
    names.ENGINE_TIME_S: ["1_0", "\t2", "1e1 "],
    names.GEN_AI_USAGE_INPUT_TOKENS: ["1_000", " 12", "12\n", "\u200712", "007", "１２"],
    names.ENGINE_CONCURRENT_REQUESTS: ["+3", "0_3"],
}
READABLE_NUMBER_TEXT = {
    names.COST_USD: "1e-3",
    names.ENGINE_TIME_S: "2.5E+1",
    names.GEN_AI_USAGE_INPUT_TOKENS: "0",
    names.GEN_AI_USAGE_OUTPUT_TOKENS: "1000",
}


def test_numbers_as_text_are_read_only_as_json_writes_them(
    running_collector: Collector, database_url: str, transport: str
) -> None:
    """``float()`` read a cost tag of "1_000" as 1000 and " 0.5" or "١٢" as numbers too: text that is
    not a number as JSON writes it rejects its span, as any unreadable value of that tag does."""
    odd = [(key, text) for key, texts in UNREADABLE_NUMBER_TEXT.items() for text in texts]
    spans = [make_span(index, attributes={key: text}) for index, (key, text) in enumerate(odd)]
    spans.append(make_span(100, attributes=READABLE_NUMBER_TEXT))
    answer = TRANSPORTS[transport](running_collector, make_request(spans), {})
    assert (answer.ok, answer.rejected) == (True, len(odd)), answer
    assert "evallens.cost_usd must be a number from 0 to 1e+06, not '1_000'" in answer.message
    (row,) = fetch_spans(database_url)
    assert row["name"] == "span-100"
    assert (row["cost_usd"], row["input_tokens"], row["output_tokens"]) == (0.001, 0, 1000)


def test_a_cost_or_engine_time_of_minus_zero_is_stored_as_zero(
    running_collector: Collector, database_url: str, transport: str
) -> None:
    """A cost of "-0" or -0.0 passed the check that it is not negative and was stored as -0.0, which
    PostgreSQL keeps and prints as "-0"; an engine time of -0.0 made a GPU-hour price cost -0.0 too."""
    costs: list[Any] = ["-0", "-0.0", "-0e3", -0.0]
    spans = [make_span(index, attributes={names.COST_USD: cost}) for index, cost in enumerate(costs)]
    self_hosted = {names.GEN_AI_REQUEST_MODEL: "SmolLM2-135M-Instruct", names.ENGINE_TIME_S: -0.0}
    spans.append(make_span(10, attributes={**self_hosted, names.GEN_AI_USAGE_INPUT_TOKENS: 10}))
    answer = TRANSPORTS[transport](running_collector, make_request(spans), {})
    assert (answer.ok, answer.rejected) == (True, 0), answer
    with psycopg.connect(database_url) as connection:
        stored = connection.execute("SELECT name, cost_usd::text FROM spans ORDER BY name").fetchall()
    assert stored == [(span.name, "0") for span in sorted(spans, key=lambda span: span.name)]
