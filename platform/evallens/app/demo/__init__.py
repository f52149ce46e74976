"""``evallens demo``: the whole loop on the embedded default, step by step."""

__all__: list[str] = []
