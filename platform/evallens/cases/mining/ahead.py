"""Embed the questions a Cases view will need before anyone opens it (``embed_ahead``).

A view embeds, with MiniLM, the worst questions of its window that no earlier view or mine stored:
about 400 the first time a window is seen, one to two seconds on one core. Mining each window ahead,
in the background, moves that cost off the page: a view then embeds only the questions of traces
that arrived since the last pass.
"""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.cases.mining.mine import Readers, mine_cases
from evallens.db.models import ProductionHistogram
from evallens.settings import CasesSettings


def projects_with_traffic(session: Session, since: timedelta, now: datetime | None = None) -> list[str]:
    """Projects with production traces that started in the last ``since`` (read from the hourly
    histograms, so the spans are not scanned)."""
    start = (now or datetime.now(UTC)) - since
    found = session.scalars(
        select(ProductionHistogram.project)
        .where(ProductionHistogram.hour >= start.replace(minute=0, second=0, microsecond=0))
        .distinct()
        .order_by(ProductionHistogram.project)
    )
    return list(found)


def embed_ahead(
    session: Session,
    settings: CasesSettings,
    readers: Readers,
    *,
    project: str,
    windows: list[timedelta],
    now: datetime | None = None,
) -> int:
    """Mine ``project`` over each window as a view of it would, so that the questions it embeds are
    stored; returns how many texts were embedded (0 when every one was stored already). Needs
    ``readers.embedding_model``: without one nothing can be stored. The caller commits."""
    if readers.embedding_model is None:
        raise ValueError("embedding ahead needs readers with an embedding_model to store vectors under")
    embedded = 0

    def counted(texts: list[str]) -> np.ndarray:
        nonlocal embedded
        embedded += len(texts)
        return readers.embed(texts)

    counting = replace(readers, embed=counted)
    at = now or datetime.now(UTC)
    for window in windows:
        mine_cases(session, settings, counting, project=project, since=window, limit=0, now=at)
    return embedded
