"""A target's or a judge's URL with credentials in it: the requests use them, and nothing the eval engine
stores or prints holds them (``eval run``, ``gate`` and its reports, ``eval runs``)."""

import asyncio
import base64
import json
import socket
import threading
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens.credentials import REDACTED, masked_url
from evallens.db.models import EvalResult, EvalRun
from evals.errors import EndpointUnreachable
from evals.runner.client import ChatRequest, complete
from evals.target import fetch_target_config
from tests.evals.conftest import SETS, ScriptedTarget, run_cli
from tests.evals.metrics.judge_server import faulty_judge

TARGET_PASSWORD = "target-s3cret"
JUDGE_PASSWORD = "judge-s3cret"
API_KEY = "sk-proj-Abc123Def456Ghi789"
UPSTREAM_PASSWORD = "upstream-s3cret"


def with_user(url: str, user: str, password: str) -> str:
    return url.replace("http://", f"http://{user}:{password}@", 1)


def stored_text(database_url: str) -> str:
    """Every row of every table in the database, as text."""
    with psycopg.connect(database_url) as connection:
        tables = connection.execute(
            "SELECT quote_ident(table_name) FROM information_schema.tables"
            " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        ).fetchall()
        rows = [
            str(row[0])
            for (table,) in tables
            for row in connection.execute(f"SELECT t::text FROM {table} t").fetchall()
        ]
    return "\n".join(rows)


def test_a_run_against_urls_with_passwords_stores_and_prints_none(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget, tmp_path: Path
) -> None:
    """Before: the target URL was stored as the run's endpoint and printed by ``eval run`` and ``eval
    runs``; a target without ``/v1/config`` had it in its stored config (quoted by the gate's hints);
    the judge's was stored in the run's scoring."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.no_config = True  # its config is what the eval engine makes of the URL
    target = with_user(scripted_target.url, "evaluser", TARGET_PASSWORD)
    reports = tmp_path / "reports"
    with faulty_judge() as judge:
        judge_url = with_user(judge.url, "judge", JUDGE_PASSWORD)
        env = {"EVALLENS_EVAL_JUDGE_ENDPOINT": judge_url, "EVALLENS_EVAL_JUDGE_MODE": "judge"}
        run = run_cli(
            "eval", "run", "--set", "mini-support", "--endpoint", target, "--tag", "main",
            database_url=database_url, extra_env=env,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        gate = run_cli(
            "gate", "--baseline", "main", "--candidate-endpoint", target, "--report-dir", str(reports),
            database_url=database_url, extra_env=env,
        )  # fmt: skip
        assert gate.returncode == 0, gate.stderr  # the same masked scoring: the two runs compare
    assert judge.requests  # the judge was asked, at its real URL
    listed = [run_cli("eval", "runs", *flags, database_url=database_url) for flags in ([], ["--json"])]
    assert [item.returncode for item in listed] == [0, 0], listed[0].stderr

    # the requests used the credentials: httpx sends a URL's user info as Basic auth
    basic = "Basic " + base64.b64encode(f"evaluser:{TARGET_PASSWORD}".encode()).decode()
    assert {headers.get("authorization") for headers in scripted_target.headers_seen} == {basic}
    shown = [run.stdout, run.stderr, gate.stdout, gate.stderr, *(item.stdout for item in listed)]
    shown += [path.read_text() for path in sorted(reports.iterdir())]
    assert len(shown) == 9  # gate.md, gate.xml and gate.json among them
    for text in [*shown, stored_text(database_url)]:
        assert TARGET_PASSWORD not in text
        assert JUDGE_PASSWORD not in text
    with sessions() as session:
        runs = session.scalars(select(EvalRun)).all()
    assert len(runs) == 2
    for stored in runs:
        assert stored.endpoint == masked_url(target) == f"http://[REDACTED]@{scripted_target.url[7:]}"
        assert stored.config["endpoint"] == masked_url(target)
        assert stored.scoring is not None
        assert stored.scoring["judge"]["endpoint"] == f"http://[REDACTED]@{judge.url[7:]}/v1"
    assert masked_url(target) in listed[0].stdout  # the server is still named


def answering_an_illegal_header(listener: socket.socket) -> threading.Thread:
    """A started thread that answers one request on ``listener`` with a header line h11 cannot parse, one
    a proxy in front of the target wrote with its upstream's password."""

    def answer_once() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(
                f"HTTP/1.1 200 OK\r\nx-upstream http://proxy:{TARGET_PASSWORD}@upstream\r\n\r\n".encode()
            )

    server = threading.Thread(target=answer_once)
    server.start()
    return server


def test_an_http_error_quoting_a_credential_is_stored_masked() -> None:
    """Before: httpx's error text was stored as the case's error as it came; h11 quotes a header line it
    cannot parse, here one a proxy in front of the target wrote with its upstream's password."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = answering_an_illegal_header(listener)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"

    async def ask() -> str | None:
        async with httpx.AsyncClient() as client:
            request = ChatRequest("scripted", [{"role": "user", "content": "hi"}], "run", "case", 0.0, 8)
            return (await complete(client, url, request)).error

    with listener:
        error = asyncio.run(ask())
        server.join()
    assert (
        error
        == f"RemoteProtocolError: illegal header line: bytearray(b'x-upstream http://{REDACTED}@upstream')"
    )


def test_an_http_error_quoting_a_credential_is_shown_masked_when_the_target_is_probed() -> None:
    """Before: asking the target for its config (``eval run``, ``gate``, ``eval watch`` and its
    notifications) quoted httpx's error text as it came."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = answering_an_illegal_header(listener)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    with listener, pytest.raises(EndpointUnreachable) as refused:
        fetch_target_config(url)
    server.join()
    assert str(refused.value) == (
        f"cannot reach the target at {url}: illegal header line: "
        f"bytearray(b'x-upstream http://{REDACTED}@upstream')"
    )


def test_error_bodies_and_stream_errors_echoing_credentials_are_stored_and_printed_masked(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    """Before: a target's ``HTTP 500: {body}`` and a stream's error chunk were stored as the case's error
    as they came, and the failure line of a run with too many errors quoted the first: an API (or a proxy
    before it) that echoes the key it refused, or its upstream's URL, put them in both."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.failing = {"How many days do I have to return an unopened item?"}
    scripted_target.failure_message = f"Incorrect API key provided: {API_KEY}"
    upstream = {"message": f"upstream http://proxy:{UPSTREAM_PASSWORD}@llm refused", "api_key": API_KEY}
    scripted_target.raw_chunks = {
        "How long does a refund take to reach my card?": [json.dumps({"error": upstream})]
    }
    # 2 of 4 requests fail: stored as errors of a completed run, then as the reason of a failed one
    within = {"EVALLENS_EVAL_MAX_ERROR_RATE": "0.5"}
    completed = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, database_url=database_url,
        extra_env=within,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    failed = run_cli(
        "eval", "run", "--set", "mini-support", "--endpoint", scripted_target.url, database_url=database_url
    )
    assert failed.returncode == 2
    (line,) = failed.stderr.strip().splitlines()
    assert "2 of 4 requests failed" in line and REDACTED in line
    with sessions() as session:
        errors = set(session.scalars(select(EvalResult.error).where(EvalResult.error.is_not(None))))
        reasons = list(session.scalars(select(EvalRun.error).where(EvalRun.status == "failed")))
    assert errors == {
        f'HTTP 500: {{"error":{{"message":"Incorrect API key provided: {REDACTED}"}}}}',
        f'stream error: {{"message": "upstream http://{REDACTED}@llm refused", "api_key": "{REDACTED}"}}',
    }
    assert len(reasons) == 1 and reasons[0] is not None and REDACTED in reasons[0]
    for text in [completed.stdout, completed.stderr, failed.stdout, line, stored_text(database_url)]:
        assert API_KEY not in text
        assert UPSTREAM_PASSWORD not in text
