"""``evallens service``: the app under uvicorn, configured by ``EVALLENS_*`` variables only."""

import logging
from dataclasses import dataclass

import uvicorn

from evallens.service.app import create_app
from evallens.settings import ServiceSettings


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


def run_service(settings: ServiceSettings) -> ServiceRun:
    """Serve until interrupted; the engine loads in the background (``/readyz`` turns 200)."""
    configure_logging(settings.log_level)
    app = create_app(settings)
    uvicorn.run(
        app, host=settings.service_host, port=settings.service_port, log_level=settings.log_level.lower()
    )
    model = settings.openai_model if settings.engine == "openai" else str(settings.resolved_model_path)
    return ServiceRun(f"http://{settings.service_host}:{settings.service_port}", settings.engine, model or "")
