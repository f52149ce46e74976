"""Infra figures of a window from scraped samples written into the real test database."""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, text
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import MetricSample
from evals.infra.samples import LOOKBACK, counter_delta, gauge_stats, histogram_mean

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
END = T0 + timedelta(seconds=60)  # samples count up to 15 s past it (the scrape grace)
NAME = "evallens_test_total"


def _sample(offset_s: float, value: float, *, target: str = "svc", name: str = NAME) -> dict[str, object]:
    return {
        "project": "default",
        "time": T0 + timedelta(seconds=offset_s),
        "name": name,
        "labels": {"model_name": "m"},
        "value": value,
        "target": target,
    }


def _store(sessions: sessionmaker[Session], samples: list[dict[str, object]]) -> None:
    with sessions.begin() as session:
        session.execute(insert(MetricSample), samples)


# (offset from the window start in seconds, value) of one series, and its increase worked by hand.
INCREASES = {
    "steady growth from the last sample at or before the start": (
        [(-40, 3), (-10, 10), (10, 15), (30, 20), (50, 30)],
        30 - 10,
    ),
    "a sample at the start itself is the baseline": ([(0, 10), (20, 12), (40, 17)], 7),
    "no sample before the window: the first one inside is the baseline": ([(5, 5), (25, 8), (45, 12)], 7),
    "a restart climbed back above the first value": (
        [(-10, 100), (10, 120), (30, 10), (50, 130)],
        (120 - 100) + 10 + (130 - 10),
    ),
    "a restart that stayed below the first value": (
        [(-10, 100), (10, 120), (30, 5), (50, 40)],
        (120 - 100) + 5 + (40 - 5),
    ),
    "a restart before the first sample inside": ([(-10, 100), (10, 3), (30, 9)], 3 + 6),
    "two restarts": (
        [(-10, 50), (10, 70), (20, 2), (30, 10), (40, 1), (50, 4)],
        (70 - 50) + 2 + (10 - 2) + 1 + (4 - 1),
    ),
    "a sample within the grace after the end counts, one after it does not": (
        [(-10, 0), (30, 10), (70, 20), (90, 100)],
        20,
    ),
    "a baseline older than the lookback is no baseline": (
        [(-LOOKBACK.total_seconds() - 30, 1), (10, 40), (30, 45)],
        5,
    ),
}


@pytest.mark.parametrize(("points", "expected"), INCREASES.values(), ids=INCREASES.keys())
def test_counter_increase_sums_the_rises_and_counts_a_drop_as_a_restart(
    sessions: sessionmaker[Session], points: list[tuple[float, float]], expected: float
) -> None:
    _store(sessions, [_sample(offset_s, value) for offset_s, value in points])
    with sessions.begin() as session:
        assert counter_delta(session, "default", NAME, T0, END) == pytest.approx(expected)


def test_counter_without_samples_in_the_window_has_no_increase(sessions: sessionmaker[Session]) -> None:
    _store(sessions, [_sample(-30, 5), _sample(-10, 8), _sample(120, 20)])
    with sessions.begin() as session:
        assert counter_delta(session, "default", NAME, T0, END) is None


def test_the_same_series_of_two_targets_are_two_series(sessions: sessionmaker[Session]) -> None:
    # The service and vLLM (or two replicas) expose the same counter with the same labels, scraped in turn.
    _store(
        sessions,
        [
            _sample(-10, 1000, target="vllm-a"),
            _sample(-5, 5, target="vllm-b"),
            _sample(10, 1010, target="vllm-a"),
            _sample(15, 7, target="vllm-b"),
            _sample(30, 1020, target="vllm-a"),
            _sample(35, 9, target="vllm-b"),
        ],
    )
    with sessions.begin() as session:
        assert counter_delta(session, "default", NAME, T0, END) == pytest.approx(20 + 4)


def test_both_spellings_of_a_counter_in_the_window_each_count(sessions: sessionmaker[Session]) -> None:
    """Before: only the first spelling found counted. Here the target was upgraded mid-window and its
    counter lost ``_total`` (prometheus-client writes it; another exporter may not)."""
    short = NAME.removesuffix("_total")
    _store(
        sessions,
        [
            _sample(-10, 100),
            _sample(10, 110),
            _sample(20, 130),
            _sample(30, 2, name=short),  # a new series, from zero: its first sample is its baseline
            _sample(40, 7, name=short),
            _sample(50, 3, name=short),  # a restart
        ],
    )
    with sessions.begin() as session:
        for name in (NAME, short):
            assert counter_delta(session, "default", name, T0, END) == pytest.approx(30 + 5 + 3)


def test_histogram_mean_pools_the_observations_of_every_target(sessions: sessionmaker[Session]) -> None:
    # vllm-a observed 4 requests queued 1 s each, vllm-b 5 queued 0.1 s each: 4.5 s over 9 requests.
    series = {"vllm-a": ((10, 14), (100, 104)), "vllm-b": ((2, 2.5), (50, 55))}
    samples = []
    for offset_s, target in ((-10, "vllm-a"), (-5, "vllm-b")):
        (sum_before, sum_after), (count_before, count_after) = series[target]
        samples += [
            _sample(offset_s, sum_before, target=target, name="q_seconds_sum"),
            _sample(offset_s, count_before, target=target, name="q_seconds_count"),
            _sample(offset_s + 40, sum_after, target=target, name="q_seconds_sum"),
            _sample(offset_s + 40, count_after, target=target, name="q_seconds_count"),
        ]
    _store(sessions, samples)
    with sessions.begin() as session:
        assert histogram_mean(session, "default", "q_seconds", T0, END) == pytest.approx(4.5 / 9)


def test_gauge_pools_the_samples_of_every_target(sessions: sessionmaker[Session]) -> None:
    # KV-cache usage of two engines: the mean over the fleet's samples, the fullest any engine got.
    _store(
        sessions,
        [
            _sample(-10, 0.9, target="vllm-a", name="kv"),  # before the window
            _sample(10, 0.2, target="vllm-a", name="kv"),
            _sample(15, 0.6, target="vllm-b", name="kv"),
            _sample(30, 0.4, target="vllm-a", name="kv"),
            _sample(35, 0.8, target="vllm-b", name="kv"),
        ],
    )
    with sessions.begin() as session:
        mean, highest = gauge_stats(session, "default", "kv", T0, END)
    assert mean == pytest.approx(0.5) and highest == pytest.approx(0.8)


def test_figures_of_a_window_read_no_samples_from_long_before_it(sessions: sessionmaker[Session]) -> None:
    # A day of history scraped every 15 s (5760 samples per name) before the window, then the window.
    num_old = 5760
    samples = []
    for name in ("q_seconds_sum", "q_seconds_count", "kv"):
        samples += [_sample(-86400 + 15 * i, i, name=name) for i in range(num_old)]
        samples += [_sample(15 * i, num_old + i, name=name) for i in range(5)]
    _store(sessions, samples)
    with sessions.begin() as session:
        session.execute(text("ANALYZE metric_samples"))
    with sessions.begin() as session:
        assert histogram_mean(session, "default", "q_seconds", T0, END) == pytest.approx(1.0)
        assert gauge_stats(session, "default", "kv", T0, END) == (num_old + 2, num_old + 4)
        # this transaction's reads of the table, whatever plan answered them
        seq_read, index_fetched = session.execute(
            text(
                "SELECT seq_tup_read, idx_tup_fetch FROM pg_stat_xact_user_tables"
                " WHERE relname = 'metric_samples'"
            )
        ).one()
    assert seq_read + index_fetched < num_old
