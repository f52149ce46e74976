"""Migrations: up, down, up again; models and migrations agree; a failing migration changes nothing."""

import json
import shutil
import subprocess
import sys
import uuid
from datetime import date
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, inspect, text

from evallens.credentials import REDACTED, masked_url
from evallens.db import create_db_engine
from evallens.db.migrate import (
    MIGRATIONS_DIR,
    MigrationFailed,
    alembic_config,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from evallens.db.partitions import create_span_partitions
from evallens.runs.scoring import scoring_differences
from evallens.settings import child_environment
from evals.target import base_url, fingerprint_of

EXPECTED_TABLES = {
    "spans",
    "genai_content",
    "trace_summaries",
    "span_rollups",
    "span_dimensions",
    "metric_samples",
    "model_prices",
    "eval_sets",
    "eval_cases",
    "eval_runs",
    "eval_results",
    "eval_tags",
    "gate_reports",
    "documents",
    "chunks",
    "projects",
    "api_keys",
    "collector_quarantine",
}


def table_names(url: str) -> set[str]:
    engine = create_db_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(empty_database_url: str) -> None:
    upgrade(empty_database_url)
    assert table_names(empty_database_url) >= EXPECTED_TABLES

    downgrade(empty_database_url, "base")
    assert table_names(empty_database_url) == {"alembic_version"}

    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    assert current_revision(engine) == head_revision()
    engine.dispose()
    assert table_names(empty_database_url) >= EXPECTED_TABLES


def test_models_and_migrations_agree(database_url: str) -> None:
    # alembic check raises when autogenerate would produce any operation
    command.check(alembic_config(database_url))


FAILING_REVISION = """
from alembic import op

revision = "ffffffffffff"
down_revision = {head!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TABLE half_written (id int)")
    op.execute("SELECT 1 / 0")


def downgrade() -> None:
    pass
"""


def test_failing_migration_leaves_previous_revision(empty_database_url: str, tmp_path: Path) -> None:
    upgrade(empty_database_url)
    head = head_revision()
    scripts = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, scripts)
    (scripts / "versions" / "ffffffffffff_fails.py").write_text(FAILING_REVISION.format(head=head))

    with pytest.raises(MigrationFailed, match="division by zero"):
        upgrade(empty_database_url, script_location=scripts)

    engine = create_db_engine(empty_database_url)
    assert current_revision(engine) == head
    engine.dispose()
    assert "half_written" not in table_names(empty_database_url)


def test_spans_of_two_projects_with_one_identity_survive_a_downgrade(empty_database_url: str) -> None:
    """0003 puts the project in the spans key; going back keeps one of two rows the old key cannot hold."""
    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    row = (
        "INSERT INTO spans (trace_id, span_id, start_time, end_time, duration_ms, name, kind, status_code,"
        " attributes, resource, events, project) VALUES ('{t}', '{s}', '2026-01-01T00:00:00Z',"
        " '2026-01-01T00:00:01Z', 1000, 'n', 0, 0, '{{}}', '{{}}', '[]', '{p}')"
    )
    with engine.begin() as connection:
        create_span_partitions(connection, [date(2026, 1, 1)])
        for project in ("alpha", "beta"):
            connection.execute(text(row.format(t="a" * 32, s="b" * 16, p=project)))
    engine.dispose()
    downgrade(empty_database_url, "0002")
    engine = create_db_engine(empty_database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT project FROM spans")).scalars().all() == ["alpha"]
    engine.dispose()
    upgrade(empty_database_url)


BETA_REFUNDS = "INSERT INTO documents (project, id, text, content_hash) VALUES ('beta', 'refunds', 'B.', 'b')"


def test_documents_keep_their_chunks_and_become_the_default_projects(empty_database_url: str) -> None:
    """0011 puts the project in the documents key: stored documents and chunks stay, as the default
    project's; afterwards another project may hold a document of the same id; going back keeps the
    default project's one."""
    upgrade(empty_database_url, "0010")
    engine = create_db_engine(empty_database_url)
    vector = "[" + ",".join(["0.1"] * 384) + "]"
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO documents (id, text, content_hash) VALUES ('refunds', 'Refunds.', 'h')")
        )
        connection.execute(
            text(
                "INSERT INTO chunks (id, document_id, ordinal, text, num_tokens, embedding)"
                " VALUES ('c1', 'refunds', 0, 'Refunds.', 2, CAST(:v AS vector))"
            ),
            {"v": vector},
        )
    engine.dispose()
    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    with engine.begin() as connection:
        assert connection.execute(text("SELECT project, id, text FROM documents")).all() == [
            ("default", "refunds", "Refunds.")
        ]
        assert connection.execute(text("SELECT project, id, document_id FROM chunks")).all() == [
            ("default", "c1", "refunds")
        ]
        connection.execute(text(BETA_REFUNDS))
        connection.execute(
            text(
                "INSERT INTO chunks (project, id, document_id, ordinal, text, num_tokens, embedding)"
                " VALUES ('beta', 'c2', 'refunds', 0, 'B.', 1, CAST(:v AS vector))"
            ),
            {"v": vector},
        )
        connection.execute(text("DELETE FROM documents WHERE project = 'beta'"))  # cascades to its chunk only
        assert connection.execute(text("SELECT id FROM chunks")).scalars().all() == ["c1"]
        connection.execute(text(BETA_REFUNDS))
    engine.dispose()
    downgrade(empty_database_url, "0010")
    engine = create_db_engine(empty_database_url)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT project, id, text FROM documents")).all() == [
            ("default", "refunds", "Refunds.")
        ]
        assert connection.execute(text("SELECT id FROM chunks")).scalars().all() == ["c1"]
    engine.dispose()
    upgrade(empty_database_url)


TARGET = "http://evaluser:target-s3cret@target.example:8000"
JUDGE = "http://judge.example:9000/v1?api_key=judge-s3cret&model=j"
MODELS = [{"id": "scripted"}]


def insert_row(connection: Connection, table: str, **values: object) -> None:
    """Insert one row as the schema of its revision takes it (no model: models follow the head)."""
    columns = ", ".join(values)
    marks = ", ".join(
        f"CAST(:{name} AS jsonb)" if isinstance(value, dict | list) else f":{name}"
        for name, value in values.items()
    )
    connection.execute(
        text(f"INSERT INTO {table} ({columns}) VALUES ({marks})"),
        {name: json.dumps(v) if isinstance(v, dict | list) else v for name, v in values.items()},
    )


def seed_0012(url: str) -> dict[str, str]:
    """At 0012: a run against ``TARGET`` (no /v1/config: its config made from the URL) scored by the judge
    at ``JUDGE``, a failed run whose error quotes its URL, a gate whose hint quotes ``TARGET``, and a tag
    of project alpha on a default run."""
    engine = create_db_engine(url)
    config = {"endpoint": TARGET, "models": MODELS}
    runs = {"old": str(uuid.uuid4()), "failed": str(uuid.uuid4())}
    with engine.begin() as connection:
        set_id = connection.execute(
            text("INSERT INTO eval_sets (name, version, content_hash) VALUES ('s', 1, 'h') RETURNING id")
        ).scalar_one()
        insert_row(
            connection, "eval_runs", id=runs["old"], endpoint=TARGET, config=config,
            config_fingerprint=fingerprint_of(config), eval_set_id=set_id, status="completed",
            scoring={"metrics_code": "abc", "judge": {"endpoint": JUDGE, "model": "j"}},
        )  # fmt: skip
        insert_row(
            connection, "eval_runs", id=runs["failed"], endpoint="http://target.example/?token=target-s3cret",
            config={"fingerprint": "from-the-service", "model": "m"}, config_fingerprint="from-the-service",
            error=f"the target at {TARGET} stopped answering during the run",
            eval_set_id=set_id, status="failed",
        )  # fmt: skip
        insert_row(connection, "eval_tags", eval_set_name="s", tag="main", run_id=runs["old"])
        insert_row(
            connection, "eval_tags", project="alpha", eval_set_name="s", tag="main", run_id=runs["old"]
        )
        hint = {"message": f"accuracy got worse and the target's config changed: endpoint: {TARGET} -> x"}
        insert_row(
            connection, "gate_reports", eval_set_name="s", baseline_run_id=runs["old"],
            candidate_run_id=runs["old"], verdict="pass", report={"hints": [hint], "comparisons": []},
        )  # fmt: skip
    engine.dispose()
    return runs


def stored_runs(url: str) -> dict[str, tuple[object, ...]]:
    engine = create_db_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id::text, endpoint, config, config_fingerprint, scoring, error FROM eval_runs")
        ).all()
        stored = {row[0]: tuple(row[1:]) for row in rows}
        stored["tags"] = tuple(connection.execute(text("SELECT project, tag FROM eval_tags")).all())
        stored["hints"] = tuple(connection.execute(text("SELECT report->'hints' FROM gate_reports")).all())
    engine.dispose()
    return stored


def test_db_upgrade_masks_urls_stored_before_and_drops_cross_project_tags(empty_database_url: str) -> None:
    """Before 0015, runs stored before the eval engine masked URLs kept their credentials, and an old
    baseline's judge endpoint differed from a new run's masked one: the gate refused to compare them."""
    upgrade(empty_database_url, "0012")
    runs = seed_0012(empty_database_url)
    result = subprocess.run(
        [sys.executable, "-m", "evallens", "db", "upgrade"],
        env=child_environment({"EVALLENS_DATABASE_URL": empty_database_url}),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    stored = stored_runs(empty_database_url)
    assert "s3cret" not in str(stored)
    endpoint, config, fingerprint, scoring, _ = stored[runs["old"]]
    assert endpoint == masked_url(TARGET) == "http://[REDACTED]@target.example:8000"
    # what a new run against the same target stores: the same config and fingerprint
    new_config = {"endpoint": masked_url(base_url(TARGET)), "models": MODELS}
    assert (config, fingerprint) == (new_config, fingerprint_of(new_config))
    judge_now = {"endpoint": masked_url(JUDGE), "model": "j"}  # what describe_scoring stores now
    assert scoring == {"metrics_code": "abc", "judge": judge_now}
    assert scoring_differences(scoring, {"metrics_code": "abc", "judge": judge_now}) == []  # they compare
    endpoint, config, fingerprint, _, error = stored[runs["failed"]]
    assert endpoint == "http://target.example/?token=[REDACTED]"
    assert fingerprint == "from-the-service"  # the service's own fingerprint, not a hash of the config
    assert error == "the target at http://[REDACTED]@target.example:8000 stopped answering during the run"
    assert stored["tags"] == (("default", "main"),)  # alpha's tag on a default run is gone
    assert "endpoint: http://[REDACTED]@target.example:8000 -> x" in str(stored["hints"])

    downgrade(empty_database_url, "0012")  # the masking stays; upgrading again changes nothing
    upgrade(empty_database_url)
    assert stored_runs(empty_database_url) == stored


ECHOED_KEY = "sk-proj-Abc123Def456Ghi789"
CASE_ERROR = f'HTTP 401: {{"error":{{"message":"Incorrect API key provided: {ECHOED_KEY}"}}}}'
RUN_ERROR = f"1 of 1 requests failed (100%, over the 25% limit); first: {CASE_ERROR}"


def seed_0015(url: str) -> dict[str, object]:
    """At 0015: a default run with a result on its set's case and one on alpha's case, and a default run
    of alpha's set with a result and a tag (rows no evallens code wrote, but the schema let through); a
    case error and a failed run's reason quoting a key the target echoed; a cached judge verdict."""
    engine = create_db_engine(url)
    runs = {"own": str(uuid.uuid4()), "crossing": str(uuid.uuid4()), "failed": str(uuid.uuid4())}
    with engine.begin() as connection:
        set_ids, case_ids = {}, {}
        for project in ("default", "alpha"):
            set_ids[project] = connection.execute(
                text(
                    "INSERT INTO eval_sets (project, name, version, content_hash)"
                    " VALUES (:p, 's', 1, 'h') RETURNING id"
                ),
                {"p": project},
            ).scalar_one()
            case_ids[project] = connection.execute(
                text(
                    "INSERT INTO eval_cases (eval_set_id, case_key, scenario, expected_behavior)"
                    " VALUES (:s, 'c', 'returns', 'answer') RETURNING id"
                ),
                {"s": set_ids[project]},
            ).scalar_one()
        for name, set_id in (("own", set_ids["default"]), ("crossing", set_ids["alpha"])):
            insert_row(
                connection, "eval_runs", id=runs[name], eval_set_id=set_id, endpoint="http://target",
                config={}, config_fingerprint="fp", status="completed",
            )  # fmt: skip
        insert_row(
            connection, "eval_runs", id=runs["failed"], eval_set_id=set_ids["default"], endpoint="http://t",
            config={}, config_fingerprint="fp", status="failed", error=RUN_ERROR,
        )  # fmt: skip
        for run, case in (("own", "default"), ("own", "alpha"), ("crossing", "alpha")):
            insert_row(connection, "eval_results", run_id=runs[run], case_id=case_ids[case])
        insert_row(
            connection, "eval_results", run_id=runs["failed"], case_id=case_ids["default"], error=CASE_ERROR
        )
        insert_row(connection, "eval_tags", eval_set_name="s", tag="main", run_id=runs["crossing"])
        insert_row(
            connection, "judge_verdicts", key="k", judge_model="m", prompt_version="accuracy/1",
            question="alpha's question", reference="r", answer="a", verdict=True, reason="fine",
        )  # fmt: skip
    engine.dispose()
    return {**runs, "default_set": set_ids["default"], "default_case": case_ids["default"]}


def test_db_upgrade_gives_results_their_runs_set_and_drops_rows_crossing_sets(
    empty_database_url: str,
) -> None:
    """0016 refuses a run of another project's set and a result of a case of another set: stored results
    get their run's set; crossing rows, which the queries never showed, are deleted. Before it, a key an
    API echoed stayed in stored case errors (0015 masked URLs only), and a verdict cached on one project's
    question served every project."""
    upgrade(empty_database_url, "0015")
    seeded = seed_0015(empty_database_url)
    upgrade(empty_database_url)
    engine = create_db_engine(empty_database_url)
    masked_case_error = CASE_ERROR.replace(ECHOED_KEY, REDACTED)
    with engine.connect() as connection:
        assert connection.execute(
            text("SELECT id::text, error FROM eval_runs ORDER BY error NULLS FIRST")
        ).all() == [
            (seeded["own"], None),
            (seeded["failed"], RUN_ERROR.replace(ECHOED_KEY, REDACTED)),
        ]
        assert connection.execute(
            text(
                "SELECT run_id::text, eval_set_id, case_id, error FROM eval_results"
                " ORDER BY error NULLS FIRST"
            )
        ).all() == [
            (seeded["own"], seeded["default_set"], seeded["default_case"], None),
            (seeded["failed"], seeded["default_set"], seeded["default_case"], masked_case_error),
        ]
        assert connection.execute(text("SELECT count(*) FROM eval_tags")).scalar_one() == 0
        assert connection.execute(text("SELECT count(*) FROM judge_verdicts")).scalar_one() == 0
    engine.dispose()
    downgrade(empty_database_url, "0015")
    upgrade(empty_database_url)
