"""The reference LLM/RAG service: vLLM inference, retrieval, caches, guards, telemetry."""

__all__: list[str] = []
