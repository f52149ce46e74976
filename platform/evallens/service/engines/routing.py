"""Which engine answers a request: the main one, or a small one for short requests (optional)."""

from dataclasses import dataclass

from evallens.service.engines.base import Engine, JSONValue

ROUTE_MAIN = "main"
ROUTE_SMALL = "small"


@dataclass(frozen=True)
class Route:
    """The engine chosen for a request and the name of the rule that chose it (recorded on the span)."""

    name: str
    engine: Engine


class EngineRouter:
    """Sends prompts up to ``small_max_prompt_chars`` characters to ``small`` when there is one."""

    def __init__(self, main: Engine, small: Engine | None = None, small_max_prompt_chars: int = 200) -> None:
        self.main = main
        self.small = small
        self.small_max_prompt_chars = small_max_prompt_chars

    @property
    def engines(self) -> list[Engine]:
        """Every engine behind the router, main first."""
        return [self.main] if self.small is None else [self.main, self.small]

    def choose(self, prompt_chars: int) -> Route:
        """The route for a prompt of ``prompt_chars`` characters."""
        if self.small is not None and prompt_chars <= self.small_max_prompt_chars:
            return Route(ROUTE_SMALL, self.small)
        return Route(ROUTE_MAIN, self.main)

    def is_ready(self) -> bool:
        """True when every engine is ready."""
        return all(engine.is_ready() for engine in self.engines)

    def config(self) -> dict[str, JSONValue]:
        """The engines' configurations and the routing rule."""
        config: dict[str, JSONValue] = {ROUTE_MAIN: self.main.config()}
        if self.small is not None:
            config[ROUTE_SMALL] = self.small.config()
            config["rule"] = {"small_max_prompt_chars": self.small_max_prompt_chars}
        return config
