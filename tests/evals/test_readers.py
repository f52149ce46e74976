"""The readers the eval engine lends to mining: MiniLM embeddings remembered per process."""

from typing import Any

import numpy as np
import pytest

from evals import readers


class Recording:
    """The real MiniLM model, noting which texts it was asked to encode."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.encoded: list[str] = []

    def encode(self, texts: list[str], **options: Any) -> Any:
        self.encoded += texts
        return self.model.encode(texts, **options)


def test_mining_a_window_again_embeds_only_new_questions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readers, "_VECTORS", readers._Vectors(max_entries=3))
    first = readers.minilm_embed(["where is my order", "refund for a tent"])
    recording = Recording(readers._minilm())
    monkeypatch.setattr(readers, "_minilm", lambda: recording)
    again = readers.minilm_embed(["refund for a tent", "do you ship to canada", "refund for a tent"])
    assert recording.encoded == ["do you ship to canada"]
    assert np.allclose(again[0], first[1], atol=1e-6) and np.allclose(again[2], first[1], atol=1e-6)
    assert np.allclose(np.linalg.norm(again, axis=1), 1.0, atol=1e-5)
    readers.minilm_embed(["a fourth question"])  # over three entries: the least recently used goes
    readers.minilm_embed(["where is my order"])
    assert recording.encoded[-1] == "where is my order"
