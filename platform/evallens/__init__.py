"""evallens: self-hosted evaluation and observability for LLM/RAG services."""

__version__ = "0.1.0"

__all__ = ["__version__"]
