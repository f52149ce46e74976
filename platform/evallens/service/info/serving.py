"""What the service says about itself: the models it answers with, and its answer-changing config."""

from evallens.service.chat.fingerprint import answer_config, fingerprint
from evallens.service.chat.preflight import Preflight
from evallens.service.engines.base import JSONValue
from evallens.service.engines.routing import EngineRouter
from evallens.service.info.protocol import ModelCard, ModelList, ServiceConfig
from evallens.settings import ServiceSettings


class ServiceInfo:
    """Answers ``GET /v1/models`` and ``GET /v1/config``."""

    def __init__(self, settings: ServiceSettings, engines: EngineRouter, preflight: Preflight) -> None:
        self.settings = settings
        self.engines = engines
        self.preflight = preflight

    def models(self) -> ModelList:
        """The models the service answers with."""
        return ModelList(data=[ModelCard(id=engine.model_name) for engine in self.engines.engines])

    def config(self) -> ServiceConfig:
        """The answer-changing configuration with its fingerprint, and the serving limits beside it."""
        settings = self.settings
        config = answer_config(settings, self.engines, self.preflight.config())
        serving: dict[str, JSONValue] = {
            "max_in_flight": settings.max_in_flight,
            "max_queued": settings.max_queued,
            "ttft_budget_s": settings.ttft_budget_s,
            "total_budget_s": settings.total_budget_s,
            "kv_cache_bytes": settings.kv_cache_bytes,
            "retrieval_budget_ms": settings.retrieval_budget_ms,
            "cache_exact_ttl_s": settings.cache_exact_ttl_s,
            "cache_semantic_ttl_s": settings.cache_semantic_ttl_s,
            "cache_semantic_fallback_threshold": settings.cache_semantic_fallback_threshold,
            "breaker_error_rate": settings.breaker_error_rate,
            "auth_enabled": settings.auth_enabled,
            "capture_content": settings.capture_content,
        }
        return ServiceConfig(
            model=self.engines.main.model_name,
            fingerprint=fingerprint(config),
            answer_config=config,
            serving=serving,
        )
