"""One project's flood against the one writer and the spool: another project's spans still get in."""

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import psycopg
import pytest
from google.rpc.error_details_pb2 import RetryInfo

from collector.copy_rows import copy_rows
from collector.runtime import Collector
from collector.spool import Spool, SpoolShareTaken
from tests.collector.conftest import OwnPostgres, fetch_spans, make_request, make_span
from tests.collector.test_auth import new_key
from tests.collector.test_copy_rows import record
from tests.collector.test_durability import SPANS_PER_BATCH, batch_body, wait_for
from tests.collector.test_genai_content import legacy_events, logs_request, stored_content
from tests.collector.test_transports import send_grpc

SPANS_PER_REQUEST = 100


def wait_until(condition: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the collector neither answered nor queued the request"
        time.sleep(0.02)


def test_a_project_that_floods_the_queue_leaves_room_for_another(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """The queue before the one writer was first come, first served: a project sending faster than
    PostgreSQL takes spans filled it, and every other project's export was a 429 for as long as the
    flood went on (an exporter that honours Retry-After came back to a full queue each time)."""
    collector = make_collector(
        database_url, auth_enabled=True, collector_queue_max_spans=1000, collector_flush_max_spans=100
    )
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    keys = {project: new_key(database_url, project) for project in ("flood", "quiet")}
    answers: dict[str, list[int]] = {"flood": [], "quiet": []}
    threads: list[threading.Thread] = []

    def send(project: str, first: int) -> threading.Thread:
        spans = [make_span(first + index) for index in range(SPANS_PER_REQUEST)]
        headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {keys[project]}"}
        body = make_request(spans).SerializeToString()
        thread = threading.Thread(
            target=lambda: answers[project].append(
                httpx.post(url, content=body, headers=headers, timeout=120).status_code
            )
        )
        queued = collector.ingestor.num_queued_spans  # read before the request can be queued
        thread.start()
        threads.append(thread)
        wait_until(lambda: not thread.is_alive() or collector.ingestor.num_queued_spans > queued)
        return thread

    with psycopg.connect(database_url, autocommit=True) as blocker:
        blocker.execute("BEGIN")
        blocker.execute("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")  # nothing leaves the queue now
        try:
            for request in range(20):
                send("flood", request * SPANS_PER_REQUEST)
                if answers["flood"]:
                    break
            assert answers["flood"] == [429]
            send("quiet", 100_000)
            assert answers["quiet"] == [], "the other project was refused"
        finally:
            blocker.execute("ROLLBACK")
    for thread in threads:
        thread.join(120)
    assert answers["quiet"] == [200]
    assert len(fetch_spans(database_url, "project = 'quiet'")) == SPANS_PER_REQUEST
    assert sorted(answers["flood"]) == [200] * (len(answers["flood"]) - 1) + [429]


def held_upload(port: int, key: str, num_bytes: int) -> socket.socket:
    """A client that sends ``num_bytes`` of a body one byte longer, and then nothing more."""
    client = socket.create_connection(("127.0.0.1", port))
    head = (
        f"POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-protobuf\r\n"
        f"authorization: Bearer {key}\r\ncontent-length: {num_bytes + 1}\r\n\r\n"
    )
    client.sendall(head.encode() + b"\x0a" * num_bytes)
    return client


def answered(client: socket.socket) -> bool:
    return bool(select.select([client], [], [], 0)[0])


def test_a_project_holding_the_decode_budget_leaves_room_for_another(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """The bytes being read and decoded were first come, first served too: one project's uploads (slow
    ones, or large ones that take seconds to decode) held the whole budget, and every other project's
    export was a 429 meanwhile."""
    collector = make_collector(database_url, auth_enabled=True, collector_max_inflight_bytes=2**20)
    flood, quiet = new_key(database_url, "flood"), new_key(database_url, "quiet")
    uploads = [held_upload(collector.http_port, flood, 524_000)]
    try:
        wait_until(lambda: collector.pool.bytes_in_flight == 524_000)
        uploads.append(held_upload(collector.http_port, flood, 524_000))
        wait_until(lambda: collector.pool.bytes_in_flight == 1_048_000 or answered(uploads[1]))
        answer = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=make_request([make_span(index) for index in range(100)]).SerializeToString(),
            headers={"content-type": "application/x-protobuf", "authorization": f"Bearer {quiet}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        assert len(fetch_spans(database_url, "project = 'quiet'")) == 100
        assert uploads[1].recv(65536).startswith(b"HTTP/1.1 429 ")
    finally:
        for upload in uploads:
            upload.close()


def test_a_project_holding_the_request_slots_leaves_room_for_another(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Posts being served were first come, first served: one project's uploads (slow ones, each held up
    to collector_body_timeout_s and then sent again) took every slot, and every other project's export
    was a 503 meanwhile."""
    collector = make_collector(database_url, auth_enabled=True, collector_max_concurrent_requests=4)
    flood, quiet = new_key(database_url, "flood"), new_key(database_url, "quiet")
    uploads: list[socket.socket] = []
    try:
        for _ in range(4):
            uploads.append(held_upload(collector.http_port, flood, 1000))
            wait_until(lambda: collector.pool.bytes_in_flight == 1000 * len(uploads) or answered(uploads[-1]))
        answer = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=make_request([make_span(index) for index in range(10)]).SerializeToString(),
            headers={"content-type": "application/x-protobuf", "authorization": f"Bearer {quiet}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        assert len(fetch_spans(database_url, "project = 'quiet'")) == 10
        assert [answered(upload) for upload in uploads] == [False, False, True, True]
        refusal = uploads[2].recv(65536)
        assert refusal.startswith(b"HTTP/1.1 429 ") and b"retry-after: " in refusal.lower(), refusal
        assert b"project 'flood' already has 2 requests being served" in refusal
    finally:
        for upload in uploads:
            upload.close()


EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_a_project_holding_the_grpc_workers_leaves_room_for_another(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """gRPC calls were served first come, first served, counted before their key was checked and
    without a share per project: one project's calls that never send their message (slow uploads)
    held every worker thread until their connection was closed, and every other project's export
    waited in vain meanwhile."""
    collector = make_collector(database_url, auth_enabled=True, collector_grpc_workers=4)
    flood, quiet = new_key(database_url, "flood"), new_key(database_url, "quiet")
    never = threading.Event()

    def no_message() -> Iterator[bytes]:
        never.wait()
        yield from ()

    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        silent = channel.stream_unary(EXPORT_METHOD)
        calls = [silent.future(no_message(), metadata=(("x-evallens-key", flood),)) for _ in range(4)]
        try:
            wait_until(lambda: sum(call.done() for call in calls) == 2, timeout_s=30)
            for call in [call for call in calls if call.done()]:
                refusal = call.exception()
                assert isinstance(refusal, grpc.RpcError)
                assert refusal.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refusal
                assert "project 'flood' already has 2 requests being served" in str(refusal.details())
                trailers = dict(refusal.trailing_metadata() or ())
                assert RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay.seconds >= 1
            answer = send_grpc(
                collector, make_request([make_span(i) for i in range(10)]), {"x-evallens-key": quiet}
            )
            assert answer.ok, answer
            assert len(fetch_spans(database_url, "project = 'quiet'")) == 10
        finally:
            never.set()
            for call in calls:
                call.cancel()


def waiting_on(database_url: str, table: str) -> int:
    """Statements PostgreSQL holds waiting for a lock on ``table``."""
    with psycopg.connect(database_url) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_locks WHERE relation = %s::regclass AND NOT granted", (table,)
        ).fetchone()
    return int(row[0]) if row else 0


def test_logs_waiting_on_postgres_do_not_keep_another_project_s_key_from_being_checked(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Logs were stored in the default executor's threads with the connections key lookups use: 32
    logs posts of one project waiting on PostgreSQL (here on a lock held on ``genai_content``) took
    every thread, and another project's span export, its key not yet checked, waited behind them for
    as long as the lock was held."""
    collector = make_collector(database_url, auth_enabled=True)
    chatty, quiet = new_key(database_url, "chatty"), new_key(database_url, "quiet")
    logs_url = f"http://127.0.0.1:{collector.http_port}/v1/logs"
    headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {chatty}"}

    def logs_body(number: int) -> bytes:
        return logs_request(
            legacy_events((number + 1).to_bytes(16, "big"), (1).to_bytes(8, "big"))
        ).SerializeToString()

    first = httpx.post(logs_url, content=logs_body(0), headers=headers)
    assert first.status_code == 200, first.text  # the gate knows chatty's key now
    num_posts, body_bytes = 32, len(logs_body(1))
    with psycopg.connect(database_url) as lock_holder, ThreadPoolExecutor(num_posts) as clients:
        # writes to it wait; reads (span summaries look for content events) still go on
        lock_holder.execute("LOCK TABLE genai_content IN SHARE MODE")
        posts = [
            clients.submit(httpx.post, logs_url, content=logs_body(n), headers=headers, timeout=60)
            for n in range(1, num_posts + 1)
        ]
        # every post read (its bytes are held until its rows are stored), some waiting on the lock
        wait_until(lambda: collector.pool.bytes_in_flight == num_posts * body_bytes)
        wait_until(lambda: waiting_on(database_url, "genai_content") >= 2)
        answer = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=make_request([make_span(index) for index in range(10)]).SerializeToString(),
            headers={"content-type": "application/x-protobuf", "authorization": f"Bearer {quiet}"},
            timeout=15,
        )
        assert answer.status_code == 200, answer.text
        lock_holder.rollback()
        assert [post.result().status_code for post in posts] == [200] * num_posts
    assert len(fetch_spans(database_url, "project = 'quiet'")) == 10
    assert len(stored_content(database_url)) == 3 * (1 + num_posts)


@pytest.mark.integration
def test_a_project_that_floods_the_spool_leaves_room_for_another(
    own_postgres: OwnPostgres, make_collector: Callable[..., Collector]
) -> None:
    """While PostgreSQL was away, the spool was first come, first served: a project sending all it had
    filled it, and every other project's export was a 503 until PostgreSQL came back."""
    collector = make_collector(
        own_postgres.url,
        auth_enabled=True,
        auth_cache_ttl_s=3600,  # keys checked while PostgreSQL is up are trusted through the outage
        collector_spool_max_bytes=200_000,
        collector_retry_after_s=1,
    )
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    keys = {project: new_key(own_postgres.url, project) for project in ("flood", "quiet")}

    def post(project: str, number: int) -> httpx.Response:
        headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {keys[project]}"}
        return httpx.post(url, content=batch_body(number), headers=headers, timeout=30)

    assert [post(project, number).status_code for number, project in enumerate(keys)] == [200, 200]
    own_postgres.stop()
    acknowledged: list[int] = []
    for number in range(2, 200):
        answer = post("flood", number)
        if answer.status_code != 200:
            break
        acknowledged.append(number)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1", answer.text
    assert acknowledged and collector.health()["spooled_bytes"] > 0
    quiet = post("quiet", 1000)
    assert quiet.status_code == 200, quiet.text  # spooled, in the room the flood could not take
    assert "project 'flood' already holds its share of the spool" in answer.text
    own_postgres.start()
    wait_for(lambda: collector.health()["spooled_bytes"] == 0 and collector.health()["database_up"])
    stored = {project: len(fetch_spans(own_postgres.url, f"project = '{project}'")) for project in keys}
    assert stored == {"flood": (1 + len(acknowledged)) * SPANS_PER_BATCH, "quiet": 2 * SPANS_PER_BATCH}


def test_a_project_holding_its_share_of_the_spool_still_does_after_a_restart(tmp_path: Path) -> None:
    """What each project holds is read from the batches' file names when the spool opens."""
    rows = copy_rows([record(index) for index in range(20)])
    max_bytes = 4 * len(rows.data)
    spool = Spool(tmp_path, max_bytes, project_share=0.5)
    spool.append(rows, "flood")
    spool.append(rows, "flood")
    with pytest.raises(SpoolShareTaken):
        spool.append(rows, "flood")
    reopened = Spool(tmp_path, max_bytes, project_share=0.5)
    assert reopened.num_bytes == 2 * len(rows.data)
    assert reopened.share_taken("flood") and not reopened.share_taken("quiet")
    with pytest.raises(SpoolShareTaken):
        reopened.append(rows, "flood")
    reopened.append(rows, "quiet")
    reopened.append(rows)  # with auth off a batch has no project and no share
    reopened.remove(reopened.pending()[0])  # a flood batch is written to PostgreSQL
    assert not reopened.share_taken("flood")
    reopened.append(rows, "flood")
    assert Spool.read(reopened.pending()[-1]) == rows
