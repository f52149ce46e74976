"""Model weights prepared offline: the default chat model and a tiny test model."""

__all__: list[str] = []
