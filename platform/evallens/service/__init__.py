"""The reference LLM/RAG service: vLLM inference, retrieval, caches, guards, telemetry."""

from evallens.service.app import create_app

__all__ = ["create_app"]
