"""Fixtures for bad-case mining: the test set synced, realistic traffic stored."""

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalCase, EvalSet
from evals.sets.sync import sync_path
from tests.evallens.cases.traffic import Traffic, seed_traffic
from tests.evals.conftest import SETS, scripted_target, similarity

__all__ = ["scripted_target", "similarity"]  # fixtures of the eval engine that promotion tests replay with

SET_NAME = "mini-support"


@pytest.fixture
def traffic(sessions: sessionmaker[Session]) -> Iterator[Traffic]:
    with sessions.begin() as session:
        sync_path(session, SETS / "good")
        seeded = seed_traffic(session)
    yield seeded


def counts(sessions: sessionmaker[Session]) -> tuple[int, int]:
    """How many set versions and cases are stored (to prove a failed command changed nothing)."""
    with sessions() as session:
        return (
            session.scalar(select(func.count()).select_from(EvalSet)) or 0,
            session.scalar(select(func.count()).select_from(EvalCase)) or 0,
        )
