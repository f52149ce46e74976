"""A flood of made-up API keys from one address: refused before PostgreSQL is asked, others still get in."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import psycopg
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from collector.grpc_service import peer_address
from collector.runtime import MAX_KEY_LOOKUPS_AT_ONCE, Collector
from evallens.auth import KeyLookups, RateLimited, WrongKey
from tests.collector.conftest import fetch_spans, make_request, make_span
from tests.collector.test_auth import new_key
from tests.collector.test_transports import send_grpc
from tests.key_flood import done, lookups_in_postgres, made_up, wait_until

PROTOBUF = {"content-type": "application/x-protobuf"}
BODY = make_request([make_span(9)]).SerializeToString()


def post(url: str, key: str, source: str = "127.0.0.1") -> httpx.Response:
    """Post one span with ``key`` from the client address ``source`` (any of 127.0.0.0/8)."""
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=60) as client:
        return client.post(url, content=BODY, headers={**PROTOBUF, "x-evallens-key": key})


def test_an_address_sending_made_up_keys_is_refused_before_postgres_is_asked(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Every key the auth cache did not know cost a PostgreSQL lookup in a thread: one client sending
    distinct made-up keys held every thread that looks keys up, and a key holder coming for the first
    time (or once its key's cache entry ran out) waited behind all of them."""
    collector = make_collector(database_url, auth_enabled=True, collector_key_attempts_per_minute=2)
    key = new_key(database_url, "alpha")
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(8) as clients:
        # lookups that reach PostgreSQL wait here, where the test can count them
        lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        answers = [clients.submit(lambda i: post(url, made_up(i)).status_code, i) for i in range(8)]
        wait_until(lambda: len(done(answers)) == 6)
        assert done(answers) == [429] * 6
        wait_until(lambda: lookups_in_postgres(database_url) == 2)
        later = post(url, made_up(100))
        assert later.status_code == 429 and int(later.headers["retry-after"]) >= 1
        assert "too many refused API keys from 127.0.0.1" in later.text
        assert lookups_in_postgres(database_url) == 2  # the two let through, not one more
        lock_holder.rollback()
    assert sorted(answer.result() for answer in answers) == [401] * 2 + [429] * 6
    # still refused without a lookup; its address is all the collector knows of the client
    assert post(url, made_up(101)).status_code == 429
    answer = post(url, key, source="127.0.0.2")  # another client, a key seen for the first time
    assert answer.status_code == 200, answer.text
    assert [span["project"] for span in fetch_spans(database_url)] == ["alpha"]


def test_a_key_accepted_gives_its_attempt_back(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Only refused keys use an address's attempts: clients behind one address (a proxy) whose keys
    are looked up again every auth_cache_ttl_s never run out."""
    collector = make_collector(
        database_url, auth_enabled=True, auth_cache_ttl_s=0, collector_key_attempts_per_minute=1
    )
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    keys = [new_key(database_url, project) for project in ("alpha", "beta", "alpha")]
    assert [post(url, key).status_code for key in keys * 2] == [200] * 6
    assert post(url, made_up(0)).status_code == 401
    assert post(url, keys[0]).status_code == 429  # the attempt is spent: no lookup, even for a good key


def test_lookups_at_once_are_bounded_across_addresses(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Made-up keys from many addresses (each within its attempts) take a few lookup slots, not every
    thread and connection: the rest are a 503 with Retry-After, and a known key still gets in."""
    collector = make_collector(database_url, auth_enabled=True, auth_cache_ttl_s=3600)
    key = new_key(database_url, "alpha")
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    assert post(url, key).status_code == 200  # the gate knows this key now
    num_clients = MAX_KEY_LOOKUPS_AT_ONCE + 6
    with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(num_clients) as clients:
        lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        answers = [
            clients.submit(lambda i: post(url, made_up(i), source=f"127.0.1.{i + 1}").status_code, i)
            for i in range(num_clients)
        ]
        wait_until(lambda: len(done(answers)) == 6)
        assert done(answers) == [503] * 6
        # the refused answers can come back before the admitted lookups reach PostgreSQL
        wait_until(lambda: lookups_in_postgres(database_url) == MAX_KEY_LOOKUPS_AT_ONCE)
        assert post(url, key, source="127.0.2.1").status_code == 200
        lock_holder.rollback()
    assert sorted(answer.result() for answer in answers) == [401] * MAX_KEY_LOOKUPS_AT_ONCE + [503] * 6


EXPORT_REQUEST = make_request([make_span(0)])


def test_grpc_calls_with_made_up_keys_are_refused_before_postgres_is_asked(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """gRPC looked every unknown key up in its worker: the same flood held the workers and PostgreSQL.
    Listening on localhost, the collector sees a client over IPv4 and one over IPv6 as two addresses."""
    collector = make_collector(
        database_url, auth_enabled=True, collector_key_attempts_per_minute=2, collector_grpc_host="localhost"
    )
    key = new_key(database_url, "alpha")

    def export(host: str, api_key: str) -> grpc.StatusCode:
        with grpc.insecure_channel(f"{host}:{collector.grpc_port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            try:
                stub.Export(EXPORT_REQUEST, metadata=(("x-evallens-key", api_key),), timeout=60)
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    trailers = dict(error.trailing_metadata() or ())
                    assert int(trailers["retry-after"]) >= 1
                return error.code()
            return grpc.StatusCode.OK

    with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(6) as clients:
        lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        answers = [clients.submit(export, "127.0.0.1", made_up(i)) for i in range(6)]
        wait_until(lambda: sum(answer.done() for answer in answers) == 4)
        exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED
        assert [answer.result() for answer in answers if answer.done()] == [exhausted] * 4
        wait_until(lambda: lookups_in_postgres(database_url) == 2)
        assert export("127.0.0.1", made_up(100)) == exhausted
        assert lookups_in_postgres(database_url) == 2
        lock_holder.rollback()
    codes = [answer.result() for answer in answers]
    assert codes.count(grpc.StatusCode.UNAUTHENTICATED) == 2 and codes.count(exhausted) == 4
    assert export("127.0.0.1", made_up(101)) == exhausted
    assert export("[::1]", key) == grpc.StatusCode.OK  # another client, a key seen for the first time
    assert [span["project"] for span in fetch_spans(database_url)] == ["alpha"]


def test_grpc_calls_whose_keys_are_being_looked_up_hold_no_request_slot(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """gRPC counted a call against collector_max_concurrent_requests from its start: two calls with
    made-up keys waiting on their lookup held both slots, and a key holder's export was refused with
    RESOURCE_EXHAUSTED and no RetryInfo, which OTLP exporters take as final (the spans were dropped)."""
    collector = make_collector(
        database_url, auth_enabled=True, auth_cache_ttl_s=3600, collector_max_concurrent_requests=2
    )
    headers = {"x-evallens-key": new_key(database_url, "alpha")}
    assert send_grpc(collector, make_request([make_span(0)]), headers).ok  # the gate knows the key now
    with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(2) as clients:
        lock_holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        looked_up = [
            clients.submit(send_grpc, collector, EXPORT_REQUEST, {"x-evallens-key": made_up(i)})
            for i in range(2)
        ]
        wait_until(lambda: lookups_in_postgres(database_url) == 2)
        answer = send_grpc(collector, make_request([make_span(1)]), headers)
        assert answer.ok, answer
        lock_holder.rollback()
    assert [refusal.result().status for refusal in looked_up] == ["UNAUTHENTICATED"] * 2
    assert sorted(span["name"] for span in fetch_spans(database_url)) == ["span-0", "span-1"]


@pytest.mark.parametrize(
    ("peer", "address"),
    [
        ("ipv4:10.0.0.7:51234", "10.0.0.7"),
        ("ipv6:%5B::1%5D:51234", "::1"),
        ("ipv6:[2001:db8::1]:443", "2001:db8::1"),
        ("unix:/tmp/collector.sock", "unix:/tmp/collector.sock"),
    ],
)
def test_grpc_peers_are_addresses_as_http_gives_them(peer: str, address: str) -> None:
    assert peer_address(peer) == address


def test_addresses_are_forgotten_once_their_attempts_are_back() -> None:
    """Each client address that sent a made-up key had a bucket for good: a client with many addresses
    (an IPv6 /64 holds 2**64) could grow the collector's memory without end."""
    now = [0.0]
    lookups = KeyLookups(1, MAX_KEY_LOOKUPS_AT_ONCE, 1, clock=lambda: now[0], max_clients=10)

    def refuse(client: str) -> None:
        with pytest.raises(WrongKey), lookups.lookup(client):
            raise WrongKey("the API key is not valid")

    for index in range(10):
        refuse(f"2001:db8::{index}")
    with pytest.raises(RateLimited):  # still counted: its minute is not over
        refuse("2001:db8::0")
    now[0] = 61.0
    refuse("2001:db8::a")
    assert lookups.num_clients == 1  # the ten whose attempt is back were forgotten
    for index in range(1000):
        refuse(f"2001:db8::1:{index:x}")
        assert lookups.num_clients <= 10
