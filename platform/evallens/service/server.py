"""``evallens service``: the app under uvicorn, configured by ``EVALLENS_*`` variables only."""

import logging
from dataclasses import dataclass
from typing import Any

import uvicorn
from opentelemetry.sdk.trace import TracerProvider
from sqlalchemy import inspect

from evallens.auth import ensure_safe_bind
from evallens.db import create_db_engine, ping
from evallens.db.server import DatabaseServer, database
from evallens.db.sessions import ensure_schema
from evallens.errors import EvallensError
from evallens.http_protocol import head_deadline_protocol
from evallens.service.app import create_app
from evallens.service.info.protocol import ServiceConfig
from evallens.service.weights.pull import pull_default_model
from evallens.settings import ENV_PREFIX, ServiceSettings

logger = logging.getLogger(__name__)


class SchemaMissing(EvallensError):
    """The database has no knowledge-base tables yet."""


class ModelMissing(EvallensError):
    """The model the service would run is not prepared yet."""


# `evallens service` always has a database (the embedded one unless a URL is set), so its knowledge base
# is on; no connection is made for the description, and the address is not part of the config.
DESCRIBED_DATABASE_URL = "postgresql+psycopg://127.0.0.1/evallens"


@dataclass(frozen=True)
class ServiceRun:
    """Where the service listened and with which engine."""

    url: str
    engine: str
    model: str


def configure_logging(level: str) -> None:
    """Plain lines on stderr for evallens' loggers (the request log is one JSON object per line)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger("evallens")
    logger.addHandler(handler)
    logger.setLevel(level.upper())


def check_schema(server: DatabaseServer, settings: ServiceSettings) -> None:
    """Migrate the embedded default (or a server with EVALLENS_DATABASE_MIGRATE); else one clear line
    when PostgreSQL is unreachable or not migrated."""
    engine = create_db_engine(server.url, connect_timeout_s=settings.database_connect_timeout_s)
    try:
        ping(engine)
        ensure_schema(server, engine, settings)
        if not inspect(engine).has_table("chunks"):
            raise SchemaMissing("the database has no knowledge-base tables: run `evallens db upgrade` first")
    finally:
        engine.dispose()


def check_model_paths(settings: ServiceSettings) -> None:
    """One clear line, before anything starts, for a model directory the settings name that holds no
    model (the small route's, or the main one's): the service prepares only its default model, and the
    engine's start would fail in the background, a traceback in the log and ``/readyz`` 503 for good."""
    named = {
        "model_path": settings.model_path if settings.engine == "vllm" else None,
        "route_small_model_path": settings.route_small_model_path,  # a vLLM engine whatever the main one
    }
    for field, path in named.items():
        if path is not None and not (path / "config.json").exists():
            raise ModelMissing(f"{ENV_PREFIX}{field.upper()}: no model at {path} (no config.json there)")


def prepare_default_model(settings: ServiceSettings) -> None:
    """Prepare SmolLM2 as `evallens model pull` does when the service is to run it and it is missing."""
    if settings.engine != "vllm" or settings.model_path is not None:
        return
    if (settings.resolved_model_path / "config.json").exists():
        return
    logger.warning("no model at %s: preparing SmolLM2-135M-Instruct (once)", settings.resolved_model_path)
    report = pull_default_model(settings)
    logger.warning("prepared %s", report.chat_model_path)


def run_service(settings: ServiceSettings, insecure: bool = False) -> ServiceRun:
    """Serve until interrupted; the engine loads in the background (``/readyz`` turns 200).

    The knowledge base and API keys live in PostgreSQL (the embedded one unless a URL is set). On
    SIGTERM uvicorn drains, then raises the signal again under the handler it found: the CLI's
    (``exit_on_signal``) unwinds through ``database``, which stops an embedded server.
    Refuses a non-loopback address without auth unless ``insecure``.
    """
    ensure_safe_bind(settings.service_host, settings.auth_enabled, insecure, "the reference service")
    configure_logging(settings.log_level)
    check_model_paths(settings)
    prepare_default_model(settings)
    with database(settings) as server:
        check_schema(server, settings)
        app = create_app(settings.model_copy(update={"database_url": server.url}))
        uvicorn.run(app, **uvicorn_options(settings))
    model = settings.openai_model if settings.engine == "openai" else str(settings.resolved_model_path)
    return ServiceRun(f"http://{settings.service_host}:{settings.service_port}", settings.engine, model or "")


def uvicorn_options(settings: ServiceSettings) -> dict[str, Any]:
    """uvicorn's arguments for `evallens service`: connections that send no whole request head within
    ``service_request_head_timeout_s`` are closed (uvicorn would keep them, and their file descriptors,
    for as long as their clients do), and a client's address is its TCP peer's (uvicorn would take the
    one a loopback peer names in ``X-Forwarded-For``: a client picking its own refused-key budget)."""
    return {
        "host": settings.service_host,
        "port": settings.service_port,
        "log_level": settings.log_level.lower(),
        "http": head_deadline_protocol(settings.service_request_head_timeout_s),
        "proxy_headers": False,
    }


def describe_service(settings: ServiceSettings) -> ServiceConfig:
    """What ``GET /v1/config`` of `evallens service` run with ``settings`` answers, without running it.

    The app is built as the service builds it, and nothing loads: engines start when an app serves,
    and the model's identity comes from its files. So a replay can be known to be needed (or not)
    before waiting tens of seconds for a model to load.
    """
    check_model_paths(settings)
    if settings.engine == "vllm" and not (settings.resolved_model_path / "config.json").exists():
        raise ModelMissing(
            f"no model at {settings.resolved_model_path} yet: run `evallens model pull` "
            "(`evallens service` prepares the default model on its first start)"
        )
    described = settings.model_copy(update={"database_url": settings.database_url or DESCRIBED_DATABASE_URL})
    app = create_app(described, tracer_provider=TracerProvider())
    config: ServiceConfig = app.state.info.config()
    return config
