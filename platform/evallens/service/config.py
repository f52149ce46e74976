"""``GET /v1/config``: the effective model and every parameter that changes answers, fingerprinted."""

import hashlib
import json

from evallens.service.engines.base import JSONValue
from evallens.service.engines.routing import EngineRouter
from evallens.service.protocol import ServiceConfig
from evallens.service.rag_pipeline import RagPipeline
from evallens.settings import ServiceSettings


def answer_config(settings: ServiceSettings, router: EngineRouter, rag: RagPipeline) -> dict[str, JSONValue]:
    """What an eval must replay after a change: engines, routing, prompt and sampling defaults,
    retrieval, caches and guards."""
    return {
        **rag.config(),
        "engines": router.config(),
        "system_prompt": settings.system_prompt,
        "defaults": {
            "max_tokens": settings.default_max_tokens,
            "temperature": settings.default_temperature,
            "top_p": settings.default_top_p,
        },
    }


def fingerprint(config: dict[str, JSONValue]) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces): equal configs, equal fingerprints."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def service_config(settings: ServiceSettings, router: EngineRouter, rag: RagPipeline) -> ServiceConfig:
    """The answer-changing configuration with its fingerprint, and the serving limits beside it."""
    config = answer_config(settings, router, rag)
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
        model=router.main.model_name, fingerprint=fingerprint(config), answer_config=config, serving=serving
    )
