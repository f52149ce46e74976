"""``cases mine`` finds exactly the bad production traces, collapses near-duplicates, skips eval traffic."""

import json
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy.orm import Session, sessionmaker

from evallens.cases.mining import MiningReport, Readers, known_cases, mine_cases, says_no
from evallens.cases.mining.dedupe import collapse, normalize
from evallens.durations import parse_duration
from evallens.errors import EvallensError
from evallens.settings import CasesSettings
from evals.readers import minilm_embed, mining_readers, refuses_or_declines
from tests.evallens.cases.traffic import (
    DUPLICATES,
    Traffic,
    document_upload,
    feedback,
    request,
    request_with_content_events,
)
from tests.evals.conftest import run_cli


def mine(session: Session, *, since: timedelta, limit: int) -> MiningReport:
    """What ``evallens cases mine`` runs, on the default project."""
    return mine_cases(session, CasesSettings(), mining_readers(), project="default", since=since, limit=limit)


def test_mining_finds_exactly_the_bad_production_traces(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    with sessions() as session:
        report = mine(session, since=timedelta(days=1), limit=50)
    found = {frozenset(c.trace_ids): c for c in report.candidates}
    expected = [
        traffic.duplicates, [traffic.feedback], [traffic.degraded], [traffic.refusal], [traffic.uncited],
        [traffic.slow],
    ]  # fmt: skip
    assert set(found) == {frozenset(ids) for ids in expected}
    duplicates = found[frozenset(traffic.duplicates)]
    assert (duplicates.count, duplicates.reasons) == (3, ["error"])
    assert duplicates.trace_ids == traffic.duplicates[::-1]  # equal scores: the newest represents them
    assert duplicates.score == pytest.approx(3 + np.log2(3), abs=1e-3)
    assert report.candidates[0] is duplicates  # three failures of one question rank first
    rated = found[frozenset([traffic.feedback])]
    assert (rated.reasons, rated.feedback_score, rated.feedback_comment) == (
        ["negative_feedback"], -1.0, "It never arrived",
    )  # fmt: skip
    assert rated.question == "My email is [EMAIL] and my phone is [PHONE], where is my order?"
    assert found[frozenset([traffic.degraded])].reasons == ["degraded"]
    assert found[frozenset([traffic.refusal])].reasons == ["refusal"]
    assert found[frozenset([traffic.uncited])].reasons == ["no_citations"]
    assert found[frozenset([traffic.slow])].reasons == ["latency_outlier"]
    # 25 ordinary + 11 other production requests; eval traffic, feedback spans and a request that
    # carries no question (it answered no user) are not production
    assert report.num_traces == 25 + 11
    assert report.num_already_in_sets == 1  # the failed question that rr-001 already covers


def test_production_is_traffic_that_answered_a_user(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    with sessions.begin() as session:
        before = mine(session, since=timedelta(days=1), limit=50)
        uploads = [
            document_upload(session, traffic.now - timedelta(minutes=minute), latency_ms=30_000.0, error=True)
            for minute in (30, 29)
        ]
        # questions sent as log events only, before and after their spans, on failed requests
        early = request_with_content_events(
            session, traffic.now - timedelta(minutes=4), "Can I gift wrap my order?", events_first=True
        )
        late = request_with_content_events(
            session, traffic.now - timedelta(minutes=3), "Do you deliver on Sundays?", events_first=False
        )
    with sessions() as session:
        after = mine(session, since=timedelta(days=1), limit=50)
    listed = {trace_id for candidate in after.candidates for trace_id in candidate.trace_ids}
    assert not listed & set(uploads)  # failed and slow uploads are no user's bad case
    assert after.num_traces == before.num_traces + 2  # the two chat requests, not the uploads
    asked = {c.trace_id: c.question for c in after.candidates if c.trace_id in (early, late)}
    assert asked == {early: "Can I gift wrap my order?", late: "Do you deliver on Sundays?"}
    # the uploads' 30 s took no part in the latency percentiles: the same requests are slow outliers
    slow = [c.trace_id for c in after.candidates if "latency_outlier" in c.reasons]
    assert slow == [c.trace_id for c in before.candidates if "latency_outlier" in c.reasons] == [traffic.slow]


def test_the_window_and_the_limit(sessions: sessionmaker[Session], traffic: Traffic) -> None:
    with sessions() as session:
        week = mine(session, since=timedelta(days=7), limit=50)
        top = mine(session, since=timedelta(days=7), limit=2)
    assert len(week.candidates) == 7  # the failure three days ago joins
    assert [c.trace_id for c in top.candidates] == [c.trace_id for c in week.candidates[:2]]


def test_only_the_worst_questions_are_embedded(sessions: sessionmaker[Session], traffic: Traffic) -> None:
    lent = mining_readers()

    def mine_embedding(max_embedded: int) -> tuple[set[str], list[int]]:
        """The texts embedded and the sizes of the candidates holding the near-duplicate failures."""
        embedded: set[str] = set()

        def embed(texts: list[str]) -> np.ndarray:
            embedded.update(texts)
            return lent.embed(texts)

        with sessions() as session:
            report = mine_cases(
                session,
                CasesSettings(cases_max_embedded_questions=max_embedded),
                Readers(lent.refuses_or_declines, embed),
                project="default",
                since=timedelta(days=1),
                limit=50,
            )
        sizes = [c.count for c in report.candidates if set(c.trace_ids) & set(traffic.duplicates)]
        return embedded, sizes

    with sessions() as session:
        known = {normalize(question) for question in known_cases(session, "default")[1]}
    every, merged = mine_embedding(200)
    worst, apart = mine_embedding(1)
    assert len(every - known) > 3 and merged == [3]
    assert len(worst - known) <= 1 and worst < every  # the sets' questions and at most the worst one
    assert apart == [1, 1, 1]  # near-duplicates beyond the bound: merged only when asked alike


def test_duplicates_collapse_but_different_questions_do_not() -> None:
    vectors = minilm_embed([*DUPLICATES, "Do you ship to Canada?"])
    similarities = vectors @ vectors.T
    threshold = CasesSettings().cases_duplicate_similarity
    assert similarities[0, 1] >= threshold and similarities[0, 2] >= threshold
    assert similarities[0, 3] < 0.5
    assert collapse([], [], minilm_embed, threshold) == ([], 0)


@pytest.mark.parametrize(
    ("answer", "negative"),
    [
        ("I'm sorry, I don't know.", True),
        ("I could not find anything about that in our policies.", True),
        ("I can't help with that.", True),
        ("You can return unopened items within 30 days.", False),
        ("We don't know of any delays; it ships tomorrow.", False),
    ],
)
def test_says_no(answer: str, negative: bool) -> None:
    assert says_no(answer, refuses_or_declines) is negative


@pytest.mark.parametrize("value", ["7", "0d", "1y", "d7", ""])
def test_a_bad_window_is_one_clear_error(value: str) -> None:
    with pytest.raises(EvallensError, match="30m, 24h, 7d or 2w"):
        parse_duration(value, option="--since")


def test_cli_mine_json(database_url: str, traffic: Traffic) -> None:
    result = run_cli("cases", "mine", "--since", "1d", "--limit", "3", "--json", database_url=database_url)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert len(report["candidates"]) == 3
    assert report["candidates"][0]["trace_ids"] == traffic.duplicates[::-1]
    table = run_cli("cases", "mine", "--since", "1d", database_url=database_url)
    assert table.returncode == 0, table.stderr
    assert "36 production traces" in table.stdout and "6 candidates" in table.stdout, table.stdout
    assert "[EMAIL]" in table.stdout and "jane.doe" not in table.stdout
    bad = run_cli("cases", "mine", "--since", "week", database_url=database_url)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr


def test_a_feedback_comment_is_redacted_like_the_question(
    sessions: sessionmaker[Session], traffic: Traffic
) -> None:
    """The user's words on a thumbs down are shown beside the redacted question (``cases mine --json``):
    the personal data in them is replaced the same way."""
    with sessions.begin() as session:
        rated = request(session, traffic.now - timedelta(minutes=4), "Where is my parcel?", "On its way.")
        comment = "Wrong again, call me on +1 415 555 0100 or mail jane.doe@example.com"
        feedback(session, traffic.now - timedelta(minutes=3), rated, -1.0, comment)
    with sessions() as session:
        report = mine(session, since=timedelta(days=1), limit=50)
    [candidate] = [item for item in report.candidates if rated in item.trace_ids]
    assert candidate.feedback_comment == "Wrong again, call me on [PHONE] or mail [EMAIL]"
