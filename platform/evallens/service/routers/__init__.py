"""Thin HTTP routers, one per feature; the logic lives in the serving modules."""

from evallens.service.routers import chat, models, ops

__all__ = ["chat", "models", "ops"]
