"""End to end: ``evallens collector`` and ``evallens service`` as child processes (tiny model), demo
documents through ``POST /v1/documents``, chat and feedback over HTTP, everything found in PostgreSQL."""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
import pytest

from evallens.ports import free_port
from evallens.service.documents.loader import read_corpus
from evallens.settings import child_environment
from evallens.telemetry import attributes as attr
from tests.collector.conftest import fetch_spans, start_collector_process
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

T = TypeVar("T")
DEMO_DOCS = REPO_ROOT / "evals" / "datasets" / "acme" / "docs"
DOCUMENT_FILES = ("refund-timing.md", "returns-policy.md", "product-tr-4410-trailhead-45-backpack.md")
QUESTION = "How long does a refund to my card take?"


def poll(fetch: Callable[[], T], done: Callable[[T], bool], timeout_s: float = 90) -> T:
    """Call ``fetch`` until ``done`` holds for its result (export and scraping are batched)."""
    deadline = time.monotonic() + timeout_s
    value = fetch()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.5)
        value = fetch()
    return value


@pytest.fixture
def stack(database_url: str, tiny_model_path: Path, tmp_path: Path) -> Iterator[str]:
    """A collector (scraping the service's /metrics) and the service, both as subprocesses."""
    service_port, collector_port = free_port(), free_port()
    service_url = f"http://127.0.0.1:{service_port}"
    collector = start_collector_process(
        database_url,
        tmp_path / "collector",
        collector_port,
        EVALLENS_COLLECTOR_SCRAPE_TARGETS=f"{service_url}/metrics",
        EVALLENS_COLLECTOR_SCRAPE_INTERVAL_S="1",
    )
    environment = child_environment(
        {
            "EVALLENS_DATABASE_URL": database_url,
            # vLLM's IPC socket paths live under the data dir and must stay under 107 characters
            "EVALLENS_DATA_DIR": tempfile.mkdtemp(prefix="evl-", dir="/tmp"),
            "EVALLENS_MODEL_PATH": str(tiny_model_path),
            "EVALLENS_MAX_MODEL_LEN": "2048",
            "EVALLENS_KV_CACHE_BYTES": str(32 * 1024 * 1024),
            "EVALLENS_MAX_NUM_SEQS": "4",
            "EVALLENS_SERVICE_PORT": str(service_port),
            "EVALLENS_OTLP_ENDPOINT": f"http://127.0.0.1:{collector_port}/v1/traces",
            "EVALLENS_RETRIEVAL_BUDGET_MS": "60000",
            "EVALLENS_SCOPE_MIN_RELEVANCE": "0",
            "EVALLENS_HOUR_USD": "2.5",
            "EVALLENS_LOG_LEVEL": "warning",
        }
    )
    data_dir = Path(environment["EVALLENS_DATA_DIR"])
    log = (tmp_path / "service.log").open("wb")
    service = subprocess.Popen(
        [sys.executable, "-m", "evallens", "service"], cwd=REPO_ROOT, env=environment, stdout=log, stderr=log
    )
    try:
        ready = poll(
            lambda: _ready(service_url, service, tmp_path / "service.log"), lambda ok: ok is not None, 300
        )
        assert ready, (tmp_path / "service.log").read_text()[-3000:]
        yield service_url
    finally:
        for process in (service, collector):
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def _ready(url: str, process: subprocess.Popen[bytes], log: Path) -> bool | None:
    """True when ready, False when it died or its engine failed, None while starting."""
    if process.poll() is not None or "failed to start" in log.read_text(errors="replace"):
        return False
    try:
        return True if httpx.get(f"{url}/readyz", timeout=2).status_code == 200 else None
    except httpx.HTTPError:
        return None


def test_spans_stages_feedback_and_metrics_reach_postgres(stack: str, database_url: str) -> None:
    bodies = [body for body in read_corpus(DEMO_DOCS) if f"{body['id']}.md" in DOCUMENT_FILES]
    with httpx.Client(base_url=stack, timeout=120) as client:
        for body in bodies:
            assert client.post("/v1/documents", json=body).status_code == 201
        plain = client.post(
            "/v1/chat/completions",
            json={
                "messages": [{"role": "user", "content": "Say hello."}],
                "max_tokens": 5,
                "evallens": {"retrieval": False},
            },
            headers={
                attr.HEADER_TENANT: "shop-7",
                attr.HEADER_EVAL_RUN_ID: "run-42",
                attr.HEADER_EVAL_CASE_ID: "case-3",
            },
        )
        rag = client.post(
            "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 6, "temperature": 0},
            headers={attr.HEADER_TENANT: "shop-7"},
        )
        assert plain.status_code == rag.status_code == 200, (plain.text, rag.text)
        rag_trace = rag.headers["x-trace-id"]
        feedback = client.post(
            "/v1/feedback", json={"trace_id": rag_trace, "score": -0.5, "comment": "vague"}
        )
        assert feedback.status_code == 202

    plain_trace = plain.headers["x-trace-id"]
    usage = plain.json()["usage"]
    rows = poll(
        lambda: fetch_spans(database_url, f"trace_id = '{plain_trace}' AND parent_span_id IS NULL"), bool
    )
    assert len(rows) == 1
    request_span = rows[0]
    assert (request_span["input_tokens"], request_span["output_tokens"]) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert request_span["model"] == plain.json()["model"]
    assert request_span["cost_usd"] is not None and request_span["cost_usd"] > 0
    assert (request_span["tenant"], request_span["eval_run_id"], request_span["eval_case_id"]) == (
        "shop-7",
        "run-42",
        "case-3",
    )

    wanted = {
        attr.SPAN_RETRIEVAL,
        attr.SPAN_RETRIEVAL_VECTOR,
        attr.SPAN_RETRIEVAL_KEYWORD,
        attr.SPAN_RETRIEVAL_RERANK,
        attr.SPAN_RETRIEVAL_COMPRESS,
        attr.SPAN_CACHE_EXACT,
        attr.SPAN_CACHE_SEMANTIC,
        "generate",
    }
    stages = poll(
        lambda: fetch_spans(database_url, f"trace_id = '{rag_trace}'"),
        lambda found: wanted <= {row["name"] for row in found},
    )
    by_name = {row["name"]: row for row in stages}
    assert wanted <= set(by_name), sorted(by_name)
    for name in wanted:
        assert by_name[name]["duration_ms"] >= 0
    root = next(row for row in stages if row["parent_span_id"] is None)
    retrieval = by_name[attr.SPAN_RETRIEVAL]
    assert by_name[attr.SPAN_RETRIEVAL_VECTOR]["parent_span_id"] == retrieval["span_id"]
    assert by_name[attr.SPAN_RETRIEVAL_KEYWORD]["parent_span_id"] == retrieval["span_id"]
    assert retrieval["parent_span_id"] == root["span_id"]
    cited = rag.json()["evallens"]["cited_ids"]
    assert cited and root["attributes"][attr.RETRIEVAL_CHUNK_IDS] == cited
    assert [doc["id"] for doc in json.loads(root["attributes"][attr.GEN_AI_RETRIEVAL_DOCUMENTS])] == cited
    assert root["attributes"][attr.retrieval_document_id(0)] == cited[0]
    assert rag.json()["evallens"]["retrieved_ids"][0] == "refund-timing"
    assert root["attributes"][attr.CACHE_EXACT_HIT] is False

    feedback_rows = poll(
        lambda: fetch_spans(
            database_url, f"attributes ->> '{attr.FEEDBACK_TARGET_TRACE_ID}' = '{rag_trace}'"
        ),
        bool,
    )
    assert len(feedback_rows) == 1
    assert feedback_rows[0]["attributes"][attr.FEEDBACK_SCORE] == -0.5
    assert feedback_rows[0]["attributes"][attr.FEEDBACK_COMMENT] == "vague"

    samples = poll(lambda: _metric_samples(database_url, "vllm:kv_cache_usage_perc"), bool)
    assert samples and all(target == f"{stack}/metrics" for target, _ in samples)
    assert all(0 <= value <= 1 for _, value in samples)


def _metric_samples(database_url: str, name: str) -> list[tuple[str, float]]:
    with psycopg.connect(database_url) as connection:
        rows: list[Any] = connection.execute(
            "SELECT target, value FROM metric_samples WHERE name = %s", (name,)
        ).fetchall()
    return [(str(row[0]), float(row[1])) for row in rows]
