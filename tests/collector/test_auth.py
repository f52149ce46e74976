"""API keys on the collector: the key's project on every span, refusals that store nothing, rate limits."""

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import psycopg
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy.orm import Session

from collector.runtime import Collector
from evallens.auth import Scope, create_key, revoke_key
from evallens.db import create_db_engine
from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S
from evallens.telemetry import attributes as names
from tests.collector.conftest import OwnPostgres, count_spans, fetch_spans, make_request, make_span

PROTOBUF = {"content-type": "application/x-protobuf"}


def new_key(database_url: str, project: str, scope: Scope = Scope.INGEST) -> str:
    engine = create_db_engine(database_url)
    try:
        with Session(engine) as session, session.begin():
            return create_key(session, project, scope).key
    finally:
        engine.dispose()


def revoke(database_url: str, key: str) -> None:
    engine = create_db_engine(database_url)
    try:
        with Session(engine) as session, session.begin():
            revoke_key(session, key)
    finally:
        engine.dispose()


@pytest.fixture
def auth_collector(database_url: str, make_collector: Callable[..., Collector]) -> Collector:
    """A collector with auth on and no key cache, so revocations apply to the next request."""
    return make_collector(database_url, auth_enabled=True, auth_cache_ttl_s=0)


def finished_spans(claimed_project: str | None = None) -> list[ReadableSpan]:
    """Two spans made by the real SDK, the child claiming ``claimed_project`` when given."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "chat-svc"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.auth")
    with tracer.start_as_current_span("request"), tracer.start_as_current_span("chat") as span:
        if claimed_project is not None:
            span.set_attribute(names.PROJECT, claimed_project)
    provider.shutdown()
    return list(memory.get_finished_spans())


def http_exporter(collector: Collector, headers: dict[str, str] | None = None) -> SpanExporter:
    return HttpExporter(
        endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", headers=headers, timeout=10
    )


def grpc_exporter(collector: Collector, headers: dict[str, str] | None = None) -> SpanExporter:
    return GrpcExporter(
        endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, headers=headers, timeout=10
    )


@pytest.mark.parametrize("make_exporter", [http_exporter, grpc_exporter], ids=["http", "grpc"])
@pytest.mark.parametrize(
    "headers_for",
    [lambda key: {"authorization": f"Bearer {key}"}, lambda key: {"x-evallens-key": key}],
    ids=["bearer", "x-evallens-key"],
)
def test_valid_key_stores_spans_in_its_project(
    auth_collector: Collector,
    database_url: str,
    make_exporter: Callable[..., SpanExporter],
    headers_for: Callable[[str], dict[str, str]],
) -> None:
    key = new_key(database_url, "alpha")
    exporter = make_exporter(auth_collector, headers_for(key))
    assert exporter.export(finished_spans()) is SpanExportResult.SUCCESS
    exporter.shutdown()
    rows = fetch_spans(database_url)
    assert {row["name"] for row in rows} == {"request", "chat"}
    assert {row["project"] for row in rows} == {"alpha"}


@pytest.mark.parametrize("make_exporter", [http_exporter, grpc_exporter], ids=["http", "grpc"])
def test_key_of_project_b_cannot_write_into_project_a(
    auth_collector: Collector, database_url: str, make_exporter: Callable[..., SpanExporter]
) -> None:
    key_b = new_key(database_url, "beta")
    exporter = make_exporter(auth_collector, {"authorization": f"Bearer {key_b}"})
    assert exporter.export(finished_spans(claimed_project="alpha")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    rows = {row["name"]: row for row in fetch_spans(database_url)}
    assert {row["project"] for row in rows.values()} == {"beta"}
    assert rows["chat"]["attributes"][names.PROJECT] == "beta"
    assert count_spans(database_url) == 2


def refusal_cases(database_url: str) -> dict[str, tuple[dict[str, str], int]]:
    revoked = new_key(database_url, "alpha")
    revoke(database_url, revoked)
    reader = new_key(database_url, "alpha", Scope.READ)
    valid = new_key(database_url, "alpha")
    return {
        "no key": ({}, 401),
        "wrong key": ({"x-evallens-key": valid[:-4] + "AAAA"}, 401),
        "not a key": ({"authorization": "Bearer hunter2"}, 401),
        "other scheme": ({"authorization": f"Basic {valid}"}, 401),
        "revoked key": ({"authorization": f"Bearer {revoked}"}, 403),
        "read-only key": ({"authorization": f"Bearer {reader}"}, 403),
    }


def test_http_refusals_store_nothing(auth_collector: Collector, database_url: str) -> None:
    url = f"http://127.0.0.1:{auth_collector.http_port}/v1/traces"
    body = make_request([make_span(0), make_span(1)]).SerializeToString()
    for name, (headers, status) in refusal_cases(database_url).items():
        answer = httpx.post(url, content=body, headers={**PROTOBUF, **headers}, timeout=10)
        assert answer.status_code == status, name
    assert count_spans(database_url) == 0


GRPC_CODES = {401: grpc.StatusCode.UNAUTHENTICATED, 403: grpc.StatusCode.PERMISSION_DENIED}


def test_grpc_refusals_store_nothing(auth_collector: Collector, database_url: str) -> None:
    request = make_request([make_span(0)])
    with grpc.insecure_channel(f"127.0.0.1:{auth_collector.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        for name, (headers, status) in refusal_cases(database_url).items():
            with pytest.raises(grpc.RpcError) as refused:
                stub.Export(request, metadata=tuple(headers.items()), timeout=10)
            assert refused.value.code() == GRPC_CODES[status], name
    assert count_spans(database_url) == 0


def test_sdk_exporter_without_key_fails(auth_collector: Collector, database_url: str) -> None:
    for exporter in (http_exporter(auth_collector), grpc_exporter(auth_collector)):
        assert exporter.export(finished_spans()) is SpanExportResult.FAILURE
        exporter.shutdown()
    assert count_spans(database_url) == 0


def test_rate_limit_answers_429_with_retry_after(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    collector = make_collector(
        database_url, auth_enabled=True, auth_rate_limit_burst=2, auth_rate_limit_per_s=0.001
    )
    key, other = new_key(database_url, "alpha"), new_key(database_url, "alpha")
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    headers = {**PROTOBUF, "authorization": f"Bearer {key}"}
    statuses = [
        httpx.post(url, content=make_request([make_span(i)]).SerializeToString(), headers=headers).status_code
        for i in range(2)
    ]
    assert statuses == [200, 200]
    limited = httpx.post(url, content=make_request([make_span(9)]).SerializeToString(), headers=headers)
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert count_spans(database_url) == 2
    # the limit is per key: another key of the same project still gets through
    answer = httpx.post(
        url,
        content=make_request([make_span(3)]).SerializeToString(),
        headers={**PROTOBUF, "x-evallens-key": other},
    )
    assert answer.status_code == 200


@pytest.mark.integration
def test_a_key_postgres_cannot_check_is_a_503_with_retry_after(
    own_postgres: OwnPostgres, make_collector: Callable[..., Collector]
) -> None:
    """With PostgreSQL away the answer was a bare 503 (gRPC UNAVAILABLE), unlike the collector's other
    503/429 refusals: an exporter told nothing when to come back retried at its own pace."""
    collector = make_collector(own_postgres.url, auth_enabled=True, auth_cache_ttl_s=0)
    key = new_key(own_postgres.url, "alpha")
    metadata = (("authorization", f"Bearer {key}"),)
    own_postgres.stop()
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    body = make_request([make_span(0)]).SerializeToString()
    answer = httpx.post(url, content=body, headers={**PROTOBUF, **dict(metadata)}, timeout=30)
    assert answer.status_code == 503, answer.text
    assert "cannot check the API key" in answer.text
    assert answer.headers["retry-after"] == str(POSTGRES_AWAY_RETRY_AFTER_S)
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(make_request([make_span(1)]), metadata=metadata, timeout=30)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    trailers = dict(refused.value.trailing_metadata() or ())
    assert trailers[names.HEADER_RETRY_AFTER] == str(POSTGRES_AWAY_RETRY_AFTER_S)
    retry_info = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert retry_info.retry_delay.seconds == POSTGRES_AWAY_RETRY_AFTER_S


def test_a_lookup_postgres_refuses_is_a_500_and_ingestion_goes_on_once_mended(
    auth_collector: Collector, database_url: str
) -> None:
    """PostgreSQL refusing the key's lookup (no api_keys table) was a 503 with Retry-After, as if it were
    away: exporters retried what retrying never mends. It is a 500 (gRPC INTERNAL) with no Retry-After,
    and the collector goes on: once the table is back, the same key's spans are stored."""
    key = new_key(database_url, "alpha")
    metadata = (("authorization", f"Bearer {key}"),)
    url = f"http://127.0.0.1:{auth_collector.http_port}/v1/traces"
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE api_keys RENAME TO api_keys_away")
    body = make_request([make_span(0)]).SerializeToString()
    answer = httpx.post(url, content=body, headers={**PROTOBUF, **dict(metadata)}, timeout=30)
    assert answer.status_code == 500, answer.text
    assert "PostgreSQL refused the lookup" in answer.text
    assert "retry-after" not in answer.headers
    with grpc.insecure_channel(f"127.0.0.1:{auth_collector.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(make_request([make_span(1)]), metadata=metadata, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INTERNAL, refused.value.details()
    assert names.HEADER_RETRY_AFTER not in dict(refused.value.trailing_metadata() or ())
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE api_keys_away RENAME TO api_keys")
    answer = httpx.post(url, content=body, headers={**PROTOBUF, **dict(metadata)}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert count_spans(database_url) == 1


def test_clients_without_a_valid_key_do_not_hold_every_slot(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """uvicorn counted every open connection against collector_max_concurrent_requests and kept one
    answered 401 open: three clients posting without a key (or with a wrong one) every 0.1 s on
    kept-alive connections made the posts of every key holder a 503 for as long as they went on."""
    collector = make_collector(database_url, auth_enabled=True, collector_max_concurrent_requests=4)
    key = new_key(database_url, "alpha")
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    body = make_request([make_span(9)]).SerializeToString()
    stop = threading.Event()
    refusals: list[httpx.Response] = []

    def post_without_a_valid_key(headers: dict[str, str]) -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.wait(0.1):
                refusals.append(client.post(url, content=body, headers={**PROTOBUF, **headers}))

    keyless = [{}, {"authorization": "Bearer evk_00000000_wrong"}, {"x-evallens-key": "nonsense"}]
    clients = [threading.Thread(target=post_without_a_valid_key, args=(h,)) for h in keyless]
    for client in clients:
        client.start()
    try:
        time.sleep(0.5)  # all three connections are open before the key holder comes
        headers = {**PROTOBUF, "authorization": f"Bearer {key}"}
        for index in range(5):
            sent = make_request([make_span(index)]).SerializeToString()
            answer = httpx.post(url, content=sent, headers=headers, timeout=10)
            assert answer.status_code == 200, answer.text
    finally:
        stop.set()
        for client in clients:
            client.join()
    assert refusals and {refusal.status_code for refusal in refusals} == {401}
    assert all(refusal.headers.get("connection") == "close" for refusal in refusals)
    assert sorted(span["name"] for span in fetch_spans(database_url)) == [f"span-{i}" for i in range(5)]


def test_key_holders_are_not_queued_behind_keys_postgres_has_yet_to_check(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Every post waited for a thread of the default executor to look its key up, even a key the gate
    had just checked: 40 posts with made-up keys, each waiting on PostgreSQL (here held by a lock on
    ``api_keys``), took every thread, and a key holder's post waited for all of them."""
    collector = make_collector(database_url, auth_enabled=True, auth_cache_ttl_s=3600)
    key = new_key(database_url, "alpha")
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    headers = {**PROTOBUF, "authorization": f"Bearer {key}"}
    first = httpx.post(url, content=make_request([make_span(0)]).SerializeToString(), headers=headers)
    assert first.status_code == 200, first.text  # the gate knows the key now
    body = make_request([make_span(9)]).SerializeToString()
    with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(40) as clients:
        lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        made_up = [
            clients.submit(
                httpx.post,
                url,
                content=body,
                headers={**PROTOBUF, "x-evallens-key": f"evk_{i:08x}_x"},
                timeout=60,
            )
            for i in range(40)
        ]
        time.sleep(1)  # they reach the collector and wait on the lock
        answer = httpx.post(
            url, content=make_request([make_span(1)]).SerializeToString(), headers=headers, timeout=15
        )
        assert answer.status_code == 200, answer.text
        lock_holder.rollback()
        # looked up and refused, or refused before a lookup: the address is out of attempts (429) or
        # every lookup slot is taken (503); test_key_flood.py is about those
        assert {refusal.result().status_code for refusal in made_up} <= {401, 429, 503}
    assert sorted(span["name"] for span in fetch_spans(database_url)) == ["span-0", "span-1"]


EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_grpc_calls_without_a_valid_key_do_not_wait_for_their_message_in_a_worker(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """The key came in the call's metadata but was checked only once a worker had read the message:
    two calls with no key (or a wrong one) that never sent it held both workers until their connection
    was closed (90 s by default), and every key holder's export waited in vain for as long."""
    collector = make_collector(database_url, auth_enabled=True, collector_grpc_workers=2)
    key = new_key(database_url, "alpha")
    address = f"127.0.0.1:{collector.grpc_port}"
    never = threading.Event()

    def no_message() -> Iterator[bytes]:
        never.wait()
        yield from ()

    keyless = [(), (("authorization", "Bearer evk_00000000_wrong"),)]
    with grpc.insecure_channel(address) as silent_channel:
        silent = silent_channel.stream_unary(EXPORT_METHOD)
        stalled = [silent.future(no_message(), metadata=metadata) for metadata in keyless]
        try:
            for call in stalled:
                with pytest.raises(grpc.RpcError) as refused:
                    call.result(timeout=30)
                assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with grpc.insecure_channel(address) as channel:
                stub = trace_service_pb2_grpc.TraceServiceStub(channel)
                stub.Export(make_request([make_span(0)]), metadata=(("x-evallens-key", key),), timeout=30)
        finally:
            never.set()
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]


def test_keys_are_not_recoverable_from_the_database(database_url: str) -> None:
    key = new_key(database_url, "alpha", Scope.ADMIN)
    secret = key.split("_", 2)[2]
    with psycopg.connect(database_url) as connection:
        dump = "\n".join(
            str(row)
            for table in ("api_keys", "projects")
            for row in connection.execute(f"SELECT to_jsonb(t)::text FROM {table} t").fetchall()
        )
        raw = connection.execute("SELECT salt, key_hash FROM api_keys").fetchone()
    assert "alpha" in dump and key.split("_")[1] in dump  # the dump holds the rows, prefix included
    assert key not in dump and secret not in dump
    assert raw is not None and secret.encode() not in bytes(raw[0]) + bytes(raw[1])


def test_auth_off_keeps_client_project(running_collector: Collector, database_url: str) -> None:
    exporter = http_exporter(running_collector)
    assert exporter.export(finished_spans(claimed_project="alpha")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    rows = {row["name"]: row for row in fetch_spans(database_url)}
    assert rows["chat"]["project"] == "alpha" and rows["request"]["project"] == "default"


def test_same_span_ids_from_two_projects_are_two_spans(auth_collector: Collector, database_url: str) -> None:
    """Issue 14, finding 3: span identity includes the project, so one project never hides another's."""
    url = f"http://127.0.0.1:{auth_collector.http_port}/v1/traces"
    body = make_request([make_span(0), make_span(1)]).SerializeToString()  # same ids, same start times
    for project in ("alpha", "beta", "alpha"):  # the last one is a resend: stored once
        headers = {**PROTOBUF, "authorization": f"Bearer {new_key(database_url, project)}"}
        assert httpx.post(url, content=body, headers=headers).status_code == 200
    rows = fetch_spans(database_url)
    assert sorted((row["project"], row["name"]) for row in rows) == [
        ("alpha", "span-0"),
        ("alpha", "span-1"),
        ("beta", "span-0"),
        ("beta", "span-1"),
    ]
