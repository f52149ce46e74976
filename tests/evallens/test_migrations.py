"""Migrations: up, down, up again; models and migrations agree; a failing migration changes nothing."""

import shutil
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect

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

EXPECTED_TABLES = {
    "spans",
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
