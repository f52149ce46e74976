"""``GET /v1/models`` and ``GET /v1/config``."""

from typing import Annotated

from fastapi import APIRouter, Depends

from evallens.service.dependencies import app_state
from evallens.service.info.protocol import ModelList, ServiceConfig
from evallens.service.info.serving import ServiceInfo

router = APIRouter()
InfoDep = Annotated[ServiceInfo, Depends(app_state("info"))]


@router.get("/v1/models")
async def list_models(info: InfoDep) -> ModelList:
    """The models the service answers with."""
    return info.models()


@router.get("/v1/config")
async def get_config(info: InfoDep) -> ServiceConfig:
    """The effective model and every answer-changing parameter, with their fingerprint."""
    return info.config()
