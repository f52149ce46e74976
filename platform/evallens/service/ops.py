"""``/healthz``, ``/readyz`` and ``/metrics``, and the warm-up that ``/readyz`` waits for."""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel

from evallens.errors import EvallensError
from evallens.service.dependencies import MetricsDep, app_state
from evallens.service.engines.routing import EngineRouter

logger = logging.getLogger(__name__)
router = APIRouter()
WarmUpStep = Callable[[], Awaitable[None]]


class Readiness:
    """Starts the engines while it warms each named part (the embedder, then the indexes); ready once all
    are warm and every engine still answers. A part that fails stays unready (logged), like an engine."""

    def __init__(self, engines: EngineRouter, steps: dict[str, WarmUpStep]) -> None:
        self.engines = engines
        self.steps = steps
        self.warm: set[str] = set()
        self.failed: set[str] = set()

    async def warm_up(self) -> None:
        """Start the engines and, meanwhile, run the warm-up steps in order (both load in threads)."""
        # transformers resolves its names lazily, and not safely from two threads at once: the engine's
        # load and the embedder's, run side by side, failed with "cannot import name 'AutoTokenizer'".
        await asyncio.to_thread(_import_model_libraries)
        await asyncio.gather(self._start_engines(), self._run_steps())

    async def _start_engines(self) -> None:
        for engine in self.engines.engines:
            try:
                await engine.start()
            except EvallensError as error:  # a cause the user can mend (no model, a setting): its words do
                self.failed.add(f"engine {engine.model_name}")
                logger.error("engine %s failed to start: %s", engine.model_name, error)
            except Exception:  # a fault of ours or of vLLM's: the traceback is what finds it
                self.failed.add(f"engine {engine.model_name}")
                logger.exception("engine %s failed to start", engine.model_name)

    async def _run_steps(self) -> None:
        for name, step in self.steps.items():
            try:
                await step()
            except Exception:
                self.failed.add(name)
                logger.exception("warming up %s failed; /readyz stays 503", name)
            else:
                self.warm.add(name)

    def failed_parts(self) -> list[str]:
        """The parts whose warm-up failed and the engines that died since: a restart may fix them."""
        died = {f"engine {engine.model_name}" for engine in self.engines.engines if engine.failure()}
        return sorted(self.failed | died)

    def waiting_for(self) -> list[str]:
        """The parts not ready yet (``engine <model>``, ``embedder``, ``indexes``); empty when ready."""
        engines = [f"engine {engine.model_name}" for engine in self.engines.engines if not engine.is_ready()]
        return engines + [name for name in self.steps if name not in self.warm]


def _import_model_libraries() -> None:
    """Import, in one thread, the lazily resolved names that the engine and the embedder both load."""
    import transformers
    from sentence_transformers import SentenceTransformer  # noqa: F401  (imports transformers' models)

    for name in ("AutoConfig", "AutoModel", "AutoTokenizer", "PreTrainedTokenizerFast"):
        getattr(transformers, name)


ReadinessDep = Annotated[Readiness, Depends(app_state("readiness"))]


class ReadinessReport(BaseModel):
    """``/readyz``'s answer: ready, or the parts not ready yet and those whose warm-up failed."""

    ready: bool
    waiting_for: list[str] = []
    failed: list[str] = []


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (the model may still be loading)."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=ReadinessReport,
    response_model_exclude_unset=True,  # ready is {"ready": true}, without the empty lists
    responses={503: {"model": ReadinessReport, "description": "Not ready: `waiting_for` names what."}},
)
async def readyz(readiness: ReadinessDep, response: Response) -> ReadinessReport:
    """200 only when every engine answers and the embedder and indexes are warm; else 503 naming what is
    not (``failed``: a part whose warm-up failed or an engine that died, which a restart may fix)."""
    if not (waiting := readiness.waiting_for()):
        return ReadinessReport(ready=True)
    response.status_code = 503
    return ReadinessReport(ready=False, waiting_for=waiting, failed=readiness.failed_parts())


@router.get("/metrics", response_class=PlainTextResponse)  # documented as text: the Prometheus format
async def metrics(service_metrics: MetricsDep) -> Response:
    """The service's metrics and vLLM's engine metrics in the Prometheus text format."""
    return Response(service_metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
