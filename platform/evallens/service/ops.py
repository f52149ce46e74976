"""``/healthz``, ``/readyz`` and ``/metrics``."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from evallens.service.dependencies import EnginesDep, MetricsDep

router = APIRouter()


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (the model may still be loading)."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(engines: EnginesDep) -> JSONResponse:
    """200 only when every engine answers requests."""
    ready = engines.is_ready()
    return JSONResponse({"ready": ready}, status_code=200 if ready else 503)


@router.get("/metrics")
async def metrics(service_metrics: MetricsDep) -> Response:
    """The service's metrics and vLLM's engine metrics in the Prometheus text format."""
    return Response(service_metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
