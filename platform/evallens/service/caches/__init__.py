"""Answer caches of the reference service: exact (normalized request) and semantic (per tenant)."""

from evallens.service.caches._metrics import CacheMetrics
from evallens.service.caches.exact import ExactCache, normalize_text, request_key
from evallens.service.caches.semantic import SemanticCache, SemanticHit

__all__ = ["CacheMetrics", "ExactCache", "SemanticCache", "SemanticHit", "normalize_text", "request_key"]
