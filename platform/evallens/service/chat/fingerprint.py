"""Everything that changes a chat answer, and its fingerprint: what ``/v1/config`` shows and what the
eval engine replays on when it changes."""

import hashlib
import json

from evallens.service.engines.base import JSONValue
from evallens.service.engines.routing import EngineRouter
from evallens.settings import ServiceSettings


def answer_config(
    settings: ServiceSettings, engines: EngineRouter, preflight: dict[str, JSONValue]
) -> dict[str, JSONValue]:
    """What an eval must replay after a change: engines, routing, prompt and sampling defaults, and the
    preflight's retrieval, caches and guards."""
    return {
        **preflight,
        "engines": engines.config(),
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
