"""Mining stores question embeddings per model in PostgreSQL: a text is embedded once, ever."""

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from evallens.cases.mining import MiningReport, Readers, embed_ahead, mine_cases, projects_with_traffic
from evallens.cases.mining._vectors import QuestionVectors
from evallens.db.models import QuestionEmbedding
from evallens.settings import CasesSettings
from evals.readers import minilm_embed, minilm_model_id, refuses_or_declines
from tests.evallens.cases.traffic import Traffic


class Counting:
    """MiniLM embeddings, remembering every text asked for."""

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return minilm_embed(texts)


def mine(
    sessions: sessionmaker[Session], embed: Counting, embedding_model: str | None, now: datetime | None = None
) -> MiningReport:
    """One mine of the day before ``now``, committed as the CLI and the dashboard commit it."""
    with sessions() as session:
        report = mine_cases(
            session,
            CasesSettings(),
            Readers(refuses_or_declines, embed, embedding_model),
            project="default",
            since=timedelta(days=1),
            limit=50,
            now=now,
        )
        session.commit()
    return report


def stored(sessions: sessionmaker[Session], embedding_model: str) -> int:
    with sessions() as session:
        return (
            session.scalar(
                select(func.count())
                .select_from(QuestionEmbedding)
                .where(QuestionEmbedding.embedding_model == embedding_model)
            )
            or 0
        )


def test_a_second_mine_embeds_nothing_and_finds_the_same(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    plain, first, second = Counting(), Counting(), Counting()
    now = datetime.now(UTC)  # one window for the three, so that their reports compare
    without = mine(sessions, plain, None, now)
    assert stored(sessions, minilm_model_id()) == 0  # no model named: nothing stored
    stored_first = mine(sessions, first, minilm_model_id(), now)
    assert len(first.embedded) > 5 and len(set(first.embedded)) == len(first.embedded)
    assert stored(sessions, minilm_model_id()) == len(first.embedded)
    stored_again = mine(sessions, second, minilm_model_id(), now)
    assert second.embedded == []
    assert sorted(first.embedded) == sorted(plain.embedded)
    assert without.model_dump() == stored_first.model_dump() == stored_again.model_dump()
    assert any(candidate.count > 1 for candidate in stored_again.candidates)  # near-duplicates merged


def test_another_model_does_not_reuse_the_vectors(sessions: sessionmaker[Session], traffic: Traffic) -> None:
    first, other = Counting(), Counting()
    mine(sessions, first, minilm_model_id())
    mine(sessions, other, "another-model")
    assert sorted(other.embedded) == sorted(first.embedded)
    assert stored(sessions, "another-model") == stored(sessions, minilm_model_id()) == len(first.embedded)


def test_vectors_come_back_bit_for_bit(sessions: sessionmaker[Session]) -> None:
    vectors = minilm_embed(["where is my order", "do you ship to canada"])
    with sessions() as session:
        writer = QuestionVectors(session, "m")
        writer.add({"where is my order": vectors[0], "do you ship to canada": vectors[1]})
        writer.save()
        session.commit()
    with sessions() as session:
        found = QuestionVectors(session, "m").load(["where is my order", "do you ship to canada", "unknown"])
    assert found.keys() == {"where is my order", "do you ship to canada"}
    assert np.array_equal(found["where is my order"], vectors[0])
    assert found["do you ship to canada"].dtype == np.float32


def test_a_concurrent_writer_of_the_same_text_waits_and_does_not_fail(
    sessions: sessionmaker[Session],
) -> None:
    first_vector, second_vector = minilm_embed(["where is my order", "refund for a tent"])
    errors: list[BaseException] = []
    done = threading.Event()

    def second_writer() -> None:
        try:
            with sessions() as session:
                writer = QuestionVectors(session, "m")
                writer.add({"where is my order": second_vector, "refund for a tent": second_vector})
                writer.save()  # waits for the first transaction's row
                session.commit()
        except BaseException as error:  # noqa: BLE001 - reported by the test thread
            errors.append(error)
        finally:
            done.set()

    with sessions() as session:
        writer = QuestionVectors(session, "m")
        writer.add({"where is my order": first_vector})
        writer.save()
        thread = threading.Thread(target=second_writer)
        thread.start()
        assert not done.wait(0.5)  # blocked on the uncommitted row, not failed
        session.commit()
    thread.join(10)
    assert done.is_set() and errors == []
    with sessions() as session:
        found = QuestionVectors(session, "m").load(["where is my order", "refund for a tent"])
    assert np.array_equal(found["where is my order"], first_vector)  # the first writer's row stays
    assert np.array_equal(found["refund for a tent"], second_vector)


def test_embedding_ahead_leaves_a_view_nothing_to_embed(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    ahead, view_of_a_day, view_of_a_week = Counting(), Counting(), Counting()
    readers = Readers(refuses_or_declines, ahead, minilm_model_id())
    with sessions() as session:
        assert projects_with_traffic(session, timedelta(days=30)) == ["default"]
        assert projects_with_traffic(session, timedelta(days=30), now=traffic.now + timedelta(days=40)) == []
        embedded = embed_ahead(
            session,
            CasesSettings(),
            readers,
            project="default",
            windows=[timedelta(days=1), timedelta(days=7)],
            now=traffic.now,
        )
        session.commit()
    assert embedded == len(ahead.embedded) > 5
    assert stored(sessions, minilm_model_id()) == embedded
    with sessions() as session:  # a pass over windows already seen embeds nothing more
        again = embed_ahead(
            session, CasesSettings(), readers, project="default", windows=[timedelta(days=1)], now=traffic.now
        )
    assert again == 0
    mine(sessions, view_of_a_day, minilm_model_id(), traffic.now)
    assert view_of_a_day.embedded == []
    with sessions() as session:
        week = mine_cases(
            session,
            CasesSettings(),
            Readers(refuses_or_declines, view_of_a_week, minilm_model_id()),
            project="default",
            since=timedelta(days=7),
            limit=50,
            now=traffic.now,
        )
    assert view_of_a_week.embedded == [] and week.candidates


def test_embedding_ahead_needs_a_model_to_store_under(sessions: sessionmaker[Session]) -> None:
    with sessions() as session, pytest.raises(ValueError, match="embedding_model"):
        embed_ahead(
            session,
            CasesSettings(),
            Readers(refuses_or_declines, Counting(), None),
            project="default",
            windows=[timedelta(days=1)],
        )
