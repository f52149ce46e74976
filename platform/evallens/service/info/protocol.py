"""``GET /v1/models`` and ``GET /v1/config``: which models answer, and what changes their answers."""

import time
from typing import Literal

from pydantic import BaseModel, Field

from evallens.service.engines.base import JSONValue


class ModelCard(BaseModel):
    """One entry of ``GET /v1/models``."""

    id: str
    object: Literal["model"] = "model"
    created: int = Field(default_factory=lambda: int(time.time()))
    owned_by: str = "evallens"


class ModelList(BaseModel):
    """``GET /v1/models``."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class ServiceConfig(BaseModel):
    """``GET /v1/config``: what changes answers, and its fingerprint (replay evals when it changes)."""

    model: str
    fingerprint: str
    answer_config: dict[str, JSONValue]
    serving: dict[str, JSONValue]
