"""Inference engines behind one small interface: vLLM in this process, or an OpenAI-compatible server."""

from dataclasses import replace
from pathlib import Path

from evallens.service.engines.base import (
    Engine,
    EngineError,
    EngineRejected,
    GenerationChunk,
    GenerationResult,
    Message,
    Prompt,
    SamplingOptions,
    generate,
)
from evallens.service.engines.openai_engine import OpenAIEngine, OpenAIOptions
from evallens.service.engines.routing import EngineRouter, Route
from evallens.service.engines.vllm_engine import (
    VllmEngine,
    VllmOptions,
    effective_dtype,
    engine_arguments,
    vllm_environment,
)
from evallens.settings import ServiceSettings
from evallens.settings.service import DEFAULT_CHAT_MODEL_DIR

__all__ = [
    "Engine",
    "EngineError",
    "EngineRejected",
    "EngineRouter",
    "GenerationChunk",
    "GenerationResult",
    "Message",
    "OpenAIEngine",
    "OpenAIOptions",
    "Prompt",
    "Route",
    "SamplingOptions",
    "VllmEngine",
    "VllmOptions",
    "create_engine",
    "create_router",
    "engine_arguments",
    "generate",
    "vllm_environment",
    "vllm_options",
]


def vllm_options(settings: ServiceSettings, model_path: Path | None = None) -> VllmOptions:
    """vLLM options from the service settings, for the main model or another one."""
    path = model_path or settings.resolved_model_path
    return VllmOptions(
        model_path=path,
        served_model_name=(settings.served_model_name if model_path is None else None) or path.name,
        max_model_len=settings.max_model_len,
        kv_cache_bytes=settings.kv_cache_bytes,
        max_num_seqs=settings.max_num_seqs,
        dtype=effective_dtype(settings.dtype),
        enable_prefix_caching=settings.enable_prefix_caching,
        cache_dir=settings.cache_dir,
        pulled=path == settings.models_dir / DEFAULT_CHAT_MODEL_DIR == settings.resolved_model_path,
    )


def create_engine(settings: ServiceSettings) -> Engine:
    """The main engine the settings ask for (not started)."""
    if settings.engine == "openai":
        if not settings.openai_base_url or not settings.openai_model:
            raise EngineError("engine `openai` needs EVALLENS_OPENAI_BASE_URL and EVALLENS_OPENAI_MODEL")
        return OpenAIEngine(
            OpenAIOptions(settings.openai_base_url, settings.openai_model, api_key=settings.openai_api_key)
        )
    return VllmEngine(vllm_options(settings))


def create_router(settings: ServiceSettings, main: Engine | None = None) -> EngineRouter:
    """The main engine (given, or built from settings) and the optional small one for short prompts."""
    small_path = settings.route_small_model_path
    main = main or create_engine(settings)
    # Beside a vLLM main engine, without stats: vLLM's metrics are the process's, and an engine's stat
    # logger unregisters those of the engines started before it; started after the main engine, the small
    # one took the main engine's KV-cache, queue and TTFT metrics off /metrics. Beside another engine
    # (openai), the small one's are the only vLLM metrics, so it keeps them.
    small = (
        VllmEngine(replace(vllm_options(settings, small_path), log_stats=not isinstance(main, VllmEngine)))
        if small_path is not None
        else None
    )
    return EngineRouter(main, small, settings.route_max_prompt_chars)
