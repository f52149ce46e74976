"""``GET /v1/models`` and ``GET /v1/config``."""

from fastapi import APIRouter

from evallens.service.config import service_config
from evallens.service.protocol import ModelCard, ModelList, ServiceConfig
from evallens.service.routers._deps import ChatServingDep, RouterDep

router = APIRouter()


@router.get("/v1/models")
async def list_models(engines: RouterDep) -> ModelList:
    """The models the service answers with."""
    return ModelList(data=[ModelCard(id=engine.model_name) for engine in engines.engines])


@router.get("/v1/config")
async def get_config(serving: ChatServingDep) -> ServiceConfig:
    """The effective model and every answer-changing parameter, with their fingerprint."""
    return service_config(serving.settings, serving.router, serving.rag)
