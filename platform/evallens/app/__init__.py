"""The entry layer: the ``evallens`` commands and the demo, which drive every component.

It may import anything (the core, the collector, the eval engine, the dashboard, the reference
service); nothing imports it. Components are imported inside the command that runs them, never at
import time, so ``evallens --help`` stays fast.
"""

__all__: list[str] = []
