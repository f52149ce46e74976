"""Thin HTTP routers, one per feature; the logic lives in the serving modules."""

from evallens.service.routers import chat, feedback, models, ops

__all__ = ["chat", "feedback", "models", "ops"]
