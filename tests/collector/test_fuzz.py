"""Random and mutated payloads never crash the collector and never store a half span."""

import json
import time

import httpx
import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collector.runtime import Collector
from tests.collector.conftest import make_request, make_span

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


payloads = st.one_of(
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

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))  # type: ignore[untyped-decorator]
        @given(payloads)  # type: ignore[untyped-decorator]
        def send(payload: tuple[str, bytes]) -> None:
            content_type, body = payload
            response = client.post(url, content=body, headers={"content-type": content_type})
            assert response.status_code in (200, 400), (response.status_code, response.text)

        send()
        assert client.get(url.replace("/v1/traces", "/healthz")).status_code == 200
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT trace_id, span_id, start_time, end_time, duration_ms, name, kind, status_code,"
            " jsonb_typeof(attributes), jsonb_typeof(resource), jsonb_typeof(events), project FROM spans"
        ).fetchall()
    assert rows, "no fuzzed span was valid: the fuzzer is too weak to prove anything"
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
    ) in rows:
        assert len(trace_id) == 32 and int(trace_id, 16) > 0
        assert len(span_id) == 16 and int(span_id, 16) > 0
        assert end >= start and duration_ms >= 0
        assert name is not None and 0 <= kind <= 5 and 0 <= status <= 2
        assert (attrs, resource, events) == ("object", "object", "array") and project
