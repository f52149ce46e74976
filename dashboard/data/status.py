"""What the database holds at all: its schema revision, and which kinds of data exist (empty states)."""

from dashboard.data._db import cached, frame


@cached
def schema_revision(url: str) -> str | None:
    """The Alembic revision of the database, or None when it was never migrated."""
    found = frame(url, "SELECT to_regclass('alembic_version') IS NOT NULL AS ok")
    if not bool(found["ok"].iloc[0]):
        return None
    revision = frame(url, "SELECT version_num FROM alembic_version")
    return None if revision.empty else str(revision["version_num"].iloc[0])


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
