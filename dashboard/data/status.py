"""What the database holds at all: its schema revision, which kinds of data exist (empty states), and
how far back the recent data reaches (the windows' defaults)."""

from datetime import timedelta

import pandas as pd
from alembic.config import Config
from alembic.script import ScriptDirectory

from dashboard.data._db import cached, frame, resource
from evallens.db.migrate import MIGRATIONS_DIR


@cached
def schema_revision(url: str) -> str | None:
    """The Alembic revision of the database, or None when it was never migrated."""
    found = frame(url, "SELECT to_regclass('alembic_version') IS NOT NULL AS ok")
    if not bool(found["ok"].iloc[0]):
        return None
    revision = frame(url, "SELECT version_num FROM alembic_version")
    return None if revision.empty else str(revision["version_num"].iloc[0])


@resource()
def code_revisions() -> tuple[str, ...]:
    """The schema revisions this code knows, newest first (none where its migrations are not shipped)."""
    if not MIGRATIONS_DIR.is_dir():
        return ()
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return tuple(script.revision for script in ScriptDirectory.from_config(config).walk_revisions())


@cached
def data_present(url: str, project: str) -> dict[str, bool]:
    """Which kinds of data ``project`` has, for the empty states."""
    row = frame(
        url,
        "SELECT EXISTS (SELECT 1 FROM spans WHERE project = :p) AS spans,"
        " EXISTS (SELECT 1 FROM eval_runs WHERE project = :p) AS runs,"
        " EXISTS (SELECT 1 FROM metric_samples WHERE project = :p) AS samples,"
        " EXISTS (SELECT 1 FROM gate_reports WHERE project = :p) AS gates,"
        " EXISTS (SELECT 1 FROM eval_sets WHERE project = :p) AS sets,"
        " EXISTS (SELECT 1 FROM collector_quarantine WHERE project = :p) AS quarantine",
        p=project,
    ).iloc[0]
    return {str(name): bool(value) for name, value in row.items()}


@cached
def traffic_extent(url: str, project: str) -> timedelta | None:
    """How far back from now the last 30 days of traces reach (the window that shows them), or None."""
    found = frame(
        url,
        "SELECT now() - min(start_time) AS extent FROM trace_summaries"
        " WHERE project = :p AND start_time >= now() - interval '30 days'",
        p=project,
    )
    return _interval(found["extent"].iloc[0])


@cached
def samples_extent(url: str, project: str) -> timedelta | None:
    """The span of serving samples worth a first look: from the start of the last three eval runs (or
    the first sample) to the newest sample; None without samples."""
    found = frame(
        url,
        """
        WITH newest AS (SELECT max(time) AS t FROM metric_samples WHERE project = :p),
        runs AS (SELECT started_at FROM eval_runs WHERE project = :p ORDER BY started_at DESC LIMIT 3),
        oldest AS (SELECT min(time) AS t FROM metric_samples WHERE project = :p
                   AND time >= (SELECT t FROM newest) - interval '30 days')
        SELECT (SELECT t FROM newest) - greatest(coalesce((SELECT min(started_at) FROM runs), '-infinity'),
                                                 (SELECT t FROM oldest)) AS extent
        """,
        p=project,
    )
    return _interval(found["extent"].iloc[0])


def _interval(value: timedelta | None) -> timedelta | None:
    if value is None or pd.isna(value):
        return None
    return max(pd.Timedelta(value).to_pytimedelta(), timedelta(0))
