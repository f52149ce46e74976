"""What the eval engine lends other components to read text: its refusal grammar and MiniLM embeddings.

``mining_readers()`` gives bad-case mining (``evallens.cases.mining``) the same readers wherever it
runs: ``evallens cases mine``, the demo and the dashboard's Cases page.
"""

from functools import cache
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
    return load_minilm()  # once per process: a dashboard mines on every page view


def minilm_embed(texts: list[str]) -> np.ndarray:
    """Unit-length all-MiniLM-L6-v2 embeddings of ``texts``."""
    return np.asarray(_minilm().encode(texts, batch_size=32, normalize_embeddings=True))


def mining_readers() -> Readers:
    """The readers every caller of ``mine_cases`` passes."""
    return Readers(refuses_or_declines=refuses_or_declines, embed=minilm_embed)
