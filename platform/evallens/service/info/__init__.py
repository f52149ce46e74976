"""``GET /v1/models`` and ``GET /v1/config``: which models answer, and everything that changes answers."""

from evallens.service.info.router import router
from evallens.service.info.serving import ServiceInfo

__all__ = ["ServiceInfo", "router"]
