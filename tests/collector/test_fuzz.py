"""Random and mutated payloads never crash the collector, never store a half span, and never store a
value outside the documented bounds (so nothing reaches PostgreSQL that it would refuse)."""

import json
import time

import httpx
import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector.runtime import Collector
from collector.validate import SpanLimits
from evallens.telemetry import attributes as names
from tests.collector.conftest import make_request, make_span, otlp_attributes

SEED_REQUEST = make_request(
    [
        make_span(i, start_ns=time.time_ns() - 10**9, attributes={"gen_ai.request.model": "gpt-4o", "k": i})
        for i in range(4)
    ]
).SerializeToString()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
span_objects = st.fixed_dictionaries(
    {},
    optional={
        "traceId": st.one_of(st.text(max_size=40), st.binary(min_size=16, max_size=16).map(bytes.hex)),
        "spanId": st.one_of(st.text(max_size=20), st.binary(min_size=8, max_size=8).map(bytes.hex)),
        "name": st.text(max_size=30),
        "kind": st.integers(-5, 10),
        "startTimeUnixNano": st.integers(-10, 2**64).map(str) | st.just(str(time.time_ns())),
        "endTimeUnixNano": st.integers(-10, 2**64).map(str),
        "attributes": st.lists(st.fixed_dictionaries({"key": st.text(max_size=10), "value": json_values})),
        "extra": json_values,
    },
)
json_documents = (
    st.fixed_dictionaries(
        {
            "resourceSpans": st.lists(
                st.fixed_dictionaries(
                    {
                        "scopeSpans": st.lists(
                            st.fixed_dictionaries({"spans": st.lists(span_objects, max_size=3)}), max_size=2
                        )
                    }
                ),
                max_size=2,
            )
        }
    )
    | json_values
)


@st.composite  # type: ignore[untyped-decorator]
def mutated_protobuf(draw: st.DrawFn) -> bytes:
    data = bytearray(SEED_REQUEST)
    for _ in range(draw(st.integers(1, 6))):
        if len(data) < 2:
            break
        position = draw(st.integers(0, len(data) - 1))
        operation = draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if operation == "flip":
            data[position] ^= draw(st.integers(1, 255))
        elif operation == "delete":
            del data[position]
        elif operation == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        else:
            data = data[: max(position, 1)]
    return bytes(data)


# Values aimed at what the collector pulls into columns: huge, negative, non-finite, long, odd types.
extreme_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.text(min_size=250, max_size=600),
    st.just("1e308"),
    st.booleans(),
)
COLUMN_ATTRIBUTES = [
    names.COST_USD,
    names.GEN_AI_USAGE_INPUT_TOKENS,
    names.GEN_AI_USAGE_OUTPUT_TOKENS,
    names.LLM_TOKEN_COUNT_PROMPT,
    names.GEN_AI_REQUEST_MODEL,
    names.TENANT,
    names.USER,
    names.FEATURE,
    names.PROJECT,
    names.EVAL_RUN_ID,
    names.EVAL_CASE_ID,
    names.ENGINE_TIME_S,
    names.ENGINE_CONCURRENT_REQUESTS,
]
NOW_NS = time.time_ns()


@st.composite  # type: ignore[untyped-decorator]
def extreme_protobuf(draw: st.DrawFn) -> bytes:
    spans = []
    for index in range(draw(st.integers(1, 4))):
        attributes = draw(st.dictionaries(st.sampled_from(COLUMN_ATTRIBUTES), extreme_values, max_size=5))
        start = NOW_NS - draw(st.integers(-(10**14), 10**14))
        span = make_span(draw(st.integers(0, 10**6)) + index, start_ns=max(start, 0))
        span.end_time_unix_nano = draw(
            st.sampled_from([2**64 - 1, start + 10**6, start + 8 * 86_400 * 10**9])
        )
        span.name = draw(st.text(max_size=5)) * draw(st.sampled_from([1, 3000]))
        del span.attributes[:]
        span.attributes.extend(otlp_attributes(attributes))
        spans.append(span)
    # and one span whose numbers are in bounds, so stored rows show the bounds are not just rejections
    bounded = {
        names.COST_USD: draw(st.floats(0, 1e6)),
        names.GEN_AI_USAGE_INPUT_TOKENS: draw(st.integers(0, 10**9)),
        names.GEN_AI_USAGE_OUTPUT_TOKENS: draw(st.integers(0, 10**9)),
    }
    spans.append(
        make_span(2_000_000 + draw(st.integers(0, 10**6)), start_ns=NOW_NS - 10**9, attributes=bounded)
    )
    resource = draw(
        st.dictionaries(st.sampled_from([names.TENANT, names.PROJECT]), extreme_values, max_size=1)
    )
    return bytes(make_request(spans, {"service.name": "fuzz", **resource}).SerializeToString())


payloads = st.one_of(
    st.tuples(st.just("application/x-protobuf"), extreme_protobuf()),
    st.tuples(st.just("application/x-protobuf"), st.binary(max_size=300)),
    st.tuples(st.just("application/x-protobuf"), mutated_protobuf()),
    st.tuples(
        st.just("application/json"), json_documents.map(lambda document: json.dumps(document).encode())
    ),
    st.tuples(st.just("application/json"), st.binary(max_size=200)),
)


def test_fuzzed_payloads(running_collector: Collector, database_url: str) -> None:
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/traces"
    with httpx.Client(timeout=30) as client:

        @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))  # type: ignore[untyped-decorator]
        @given(payloads)  # type: ignore[untyped-decorator]
        def send(payload: tuple[str, bytes]) -> None:
            content_type, body = payload
            response = client.post(url, content=body, headers={"content-type": content_type})
            assert response.status_code in (200, 400), (response.status_code, response.text)

        send()
        health = client.get(url.replace("/v1/traces", "/healthz")).json()
        assert health["ok"] and health["quarantined_spans"] == 0, health
    limits = SpanLimits()
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT trace_id, span_id, start_time, end_time, duration_ms, name, kind, status_code,"
            " jsonb_typeof(attributes), jsonb_typeof(resource), jsonb_typeof(events), project,"
            " cost_usd, input_tokens, output_tokens, greatest(length(model), length(tenant), length(user_id),"
            " length(feature), length(eval_run_id), length(eval_case_id), length(project)) FROM spans"
        ).fetchall()
        quarantined = connection.execute("SELECT count(*) FROM collector_quarantine").fetchone()
    assert rows, "no fuzzed span was valid: the fuzzer is too weak to prove anything"
    assert quarantined == (0,)
    for (
        trace_id,
        span_id,
        start,
        end,
        duration_ms,
        name,
        kind,
        status,
        attrs,
        resource,
        events,
        project,
        cost_usd,
        input_tokens,
        output_tokens,
        longest_key,
    ) in rows:
        assert len(trace_id) == 32 and int(trace_id, 16) > 0
        assert len(span_id) == 16 and int(span_id, 16) > 0
        assert end >= start and 0 <= duration_ms <= limits.max_duration_s * 1000
        assert name is not None and len(name) <= limits.max_text_chars
        assert 0 <= kind <= 5 and 0 <= status <= 2
        assert (attrs, resource, events) == ("object", "object", "array") and project
        assert cost_usd is None or 0 <= cost_usd <= limits.max_cost_usd
        assert all(t is None or 0 <= t <= limits.max_tokens for t in (input_tokens, output_tokens))
        assert longest_key is None or longest_key <= limits.max_key_chars
    assert any(cost is not None or tokens is not None for *_, cost, tokens, _, _ in rows), (
        "no fuzzed span carried a cost or tokens: the fuzzer is too weak to prove the bounds"
    )
