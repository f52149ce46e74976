"""Daily span partitions: created ahead, listed, dropped whole."""

from datetime import date

from sqlalchemy import text

from evallens.db import create_db_engine
from evallens.db.partitions import (
    create_partitions_ahead,
    create_span_partitions,
    drop_span_partitions_before,
    list_span_partitions,
    pruned_before,
)


def test_partitions_created_ahead_and_dropped(database_url: str) -> None:
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        created = create_partitions_ahead(connection, days_ahead=2, today=date(2026, 3, 10))
        assert created == ["spans_p20260309", "spans_p20260310", "spans_p20260311", "spans_p20260312"]
        # idempotent
        assert create_partitions_ahead(connection, days_ahead=2, today=date(2026, 3, 10)) == []
        create_span_partitions(connection, [date(2026, 1, 1)])
        connection.execute(
            text(
                "INSERT INTO spans (trace_id, span_id, start_time, end_time, duration_ms, name, kind,"
                " status_code, attributes, resource, events) VALUES"
                " ('a', 'b', '2026-03-10T23:59:59+00', '2026-03-11T00:00:01+00', 2000, 'x', 1, 0,"
                " '{}', '{}', '[]')"
            )
        )
        stored_in = connection.execute(text("SELECT tableoid::regclass::text FROM spans")).scalar_one()
        assert stored_in == "spans_p20260310"

    dropped = drop_span_partitions_before(engine, date(2026, 3, 10))
    assert dropped == ["spans_p20260101", "spans_p20260309"]
    with engine.connect() as connection:
        assert list_span_partitions(connection) == [
            "spans_p20260310",
            "spans_p20260311",
            "spans_p20260312",
        ]
        assert connection.execute(text("SELECT count(*) FROM spans")).scalar_one() == 1
    engine.dispose()


def test_dropping_partitions_drops_their_summaries(database_url: str) -> None:
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_span_partitions(connection, [date(2026, 3, 9), date(2026, 3, 10)])
        connection.execute(
            text(
                "INSERT INTO spans (trace_id, span_id, start_time, end_time, duration_ms, name, kind,"
                " status_code, attributes, resource, events, model) VALUES"
                " ('old', 'b', '2026-03-09T12:00:00+00', '2026-03-09T12:00:01+00', 1000, 'x', 1, 0,"
                " '{}', '{}', '[]', 'm'),"
                " ('new', 'b', '2026-03-10T12:00:00+00', '2026-03-10T12:00:01+00', 1000, 'x', 1, 0,"
                " '{}', '{}', '[]', 'm')"
            )
        )
    drop_span_partitions_before(engine, date(2026, 3, 10))
    with engine.connect() as connection:
        traces = connection.execute(text("SELECT trace_id FROM trace_summaries")).scalars().all()
        days = connection.execute(text("SELECT DISTINCT day FROM span_rollups")).scalars().all()
        values = connection.execute(text("SELECT DISTINCT day FROM span_dimensions")).scalars().all()
        assert (traces, days, values) == (["new"], [date(2026, 3, 10)], [date(2026, 3, 10)])
    engine.dispose()


def test_a_pruned_day_gets_no_partition_again(database_url: str) -> None:
    """Partitions are made ahead from yesterday on (at every start): after a prune of yesterday, that
    day came back; the prune's cutoff is kept, and no partition of an earlier day is made again."""
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        create_partitions_ahead(connection, days_ahead=1, today=date(2026, 3, 10))
        assert pruned_before(connection) is None
    assert drop_span_partitions_before(engine, date(2026, 3, 10)) == ["spans_p20260309"]
    with engine.begin() as connection:
        assert create_partitions_ahead(connection, days_ahead=1, today=date(2026, 3, 10)) == []
        assert create_span_partitions(connection, [date(2026, 3, 1), date(2026, 3, 12)]) == [
            "spans_p20260312"
        ]
        assert pruned_before(connection) == date(2026, 3, 10)
    # an earlier cutoff later does not move it back: the days between are gone already
    drop_span_partitions_before(engine, date(2026, 3, 1))
    with engine.connect() as connection:
        assert pruned_before(connection) == date(2026, 3, 10)
        assert list_span_partitions(connection) == ["spans_p20260310", "spans_p20260311", "spans_p20260312"]
    engine.dispose()
