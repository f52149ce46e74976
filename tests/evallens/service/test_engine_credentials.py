"""The service's credentials for its engine and its database never reach what it shows: ``/v1/config``
(which needs no API key, and which eval runs store with its fingerprint), its other replies, its spans or
its log. The service runs the OpenAI engine its settings name, on a real OpenAI-compatible server on a local
socket, with a user and password in its URL, an API key, and a database URL with a password.

``/v1/config`` showed ``EVALLENS_OPENAI_BASE_URL`` as set, password and key included. Its credentials are
masked there, and so in the fingerprint: the same server asked with other credentials answers alike (a
rotated password is no change a gate or ``evallens eval watch`` should replay for), another host or path
may not."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import make_url

from evallens.service import create_app
from evallens.service.engines.base import JSONValue
from evallens.service.server import describe_service
from tests.evallens.service.conftest import LoopThread, make_settings, serving, span_attributes, wait_until
from tests.evallens.service.test_engine_errors import UPSTREAM_KEY, status_upstream
from tests.evallens.service.test_internal_errors import CHAT, UPSTREAM_MODEL

pytestmark = pytest.mark.slow

PASSWORD = "hunter2-base-url"
URL_KEY = "url-key-7f3a9c"
DATABASE_PASSWORD = "db-pass-4b1e"
SECRETS = (PASSWORD, URL_KEY, UPSTREAM_KEY, DATABASE_PASSWORD)


def upstream_url(upstream: str, *, password: str = PASSWORD, path: str = "/v1") -> str:
    """The upstream's URL as a user sets it, with a user and password in it."""
    return upstream.replace("http://", f"http://evallens:{password}@") + path


def with_query(url: str, *, key: str = URL_KEY, version: str = "1") -> str:
    """``url`` with a key as a query parameter beside one that is no credential (a server that takes
    its key so is described, not run: httpx, as OpenAI's client, puts the base URL's query before the
    API's path, not after it)."""
    return f"{url}?api_key={key}&api-version={version}"


@contextmanager
def openai_settings_service(
    service_loop: LoopThread, tracer_provider: TracerProvider, settings: Any
) -> Iterator[httpx.Client]:
    """The service with the engine its settings name (built and started by the app), once ready."""
    app = create_app(settings, tracer_provider=tracer_provider)
    with serving(service_loop, app) as url, httpx.Client(base_url=url, timeout=120) as client:
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=120)
        yield client


def test_the_engine_s_credentials_reach_no_reply_span_or_log_line(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="evallens")
    with serving(service_loop, status_upstream()) as upstream:
        settings = make_settings(
            service_data_dir,
            tiny_model_path,
            engine="openai",
            openai_base_url=upstream_url(upstream),
            openai_api_key=UPSTREAM_KEY,
            openai_model=UPSTREAM_MODEL,
            database_url=make_url(database_url)
            .set(password=DATABASE_PASSWORD)
            .render_as_string(hide_password=False),
            retrieval_enabled=False,
        )
        with openai_settings_service(service_loop, tracer_provider, settings) as client:
            answers = [
                client.get("/v1/config"),
                client.post("/v1/chat/completions", json=CHAT),
                client.post("/v1/chat/completions", json={**CHAT, "stream": True}),
                client.get("/v1/models"),
                client.get("/readyz"),
                client.get("/metrics"),
            ]
    assert [answer.status_code for answer in answers] == [200] * len(answers), [a.text for a in answers]
    config = answers[0].json()
    port = upstream.rsplit(":", 1)[1]
    assert config["answer_config"]["engines"]["main"]["base_url"] == (
        f"http://[REDACTED]@127.0.0.1:{port}/v1"
    )
    shown = {
        "replies": "\n".join(answer.text for answer in answers),
        "spans": "\n".join(repr(span_attributes(span)) for span in span_exporter.get_finished_spans()),
        "log": caplog.text,
    }
    assert span_exporter.get_finished_spans()
    for where, text in shown.items():
        assert not [secret for secret in SECRETS if secret in text], (where, text)


def test_the_config_fingerprint_tells_servers_apart_not_their_credentials(
    service_loop: LoopThread,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
) -> None:
    def settings(base_url: str) -> Any:
        return make_settings(
            service_data_dir,
            tiny_model_path,
            engine="openai",
            openai_base_url=base_url,
            openai_model=UPSTREAM_MODEL,
            retrieval_enabled=False,
        )

    with serving(service_loop, status_upstream()) as upstream:
        configs = []
        for password in (PASSWORD, "another-password"):
            running = settings(upstream_url(upstream, password=password))
            with openai_settings_service(service_loop, tracer_provider, running) as client:
                configs.append(client.get("/v1/config").json())
    served, rotated = configs
    assert rotated["answer_config"] == served["answer_config"]
    assert rotated["fingerprint"] == served["fingerprint"]

    # servers this test does not run: described as `evallens service config` does, no engine started
    def described(base_url: str) -> tuple[str, JSONValue]:
        config = describe_service(settings(base_url))
        return config.fingerprint, config.answer_config["engines"]

    keyed = with_query(upstream_url(upstream))
    fingerprint, engines = described(keyed)
    assert engines == {
        "main": {
            "provider": "openai",
            "model": UPSTREAM_MODEL,
            "base_url": with_query(
                upstream_url(upstream).replace(f"evallens:{PASSWORD}", "[REDACTED]"), key="[REDACTED]"
            ),
        }
    }
    assert described(with_query(upstream_url(upstream, password="rotated"), key="rotated"))[0] == fingerprint
    others = {
        "host": with_query(upstream_url("http://localhost:8000")),
        "path": with_query(upstream_url(upstream, path="/openai/v1")),
        "parameter": with_query(upstream_url(upstream), version="2"),
        "no credentials": (plain := f"{upstream}/v1?api-version=1"),
    }
    for change, base_url in others.items():
        assert described(base_url)[0] != fingerprint, change
    assert described(plain)[1] == {"main": {"provider": "openai", "model": UPSTREAM_MODEL, "base_url": plain}}
