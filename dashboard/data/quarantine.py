"""The collector's quarantine: spans PostgreSQL refused, kept with the reason."""

import pandas as pd

from dashboard.data._db import cached, frame


@cached
def quarantine(url: str, project: str, limit: int) -> tuple[int, pd.DataFrame]:
    """How many spans of ``project`` the collector quarantined, and the newest ``limit`` of them."""
    total = frame(url, "SELECT count(*) AS n FROM collector_quarantine WHERE project = :p", p=project)
    rows = frame(
        url,
        """
        SELECT id, quarantined_at, trace_id, span_id, span->>'name' AS name, reason,
               span->>'service_name' AS service_name
        FROM collector_quarantine WHERE project = :p ORDER BY id DESC LIMIT :limit
        """,
        p=project,
        limit=limit,
    )
    return int(total["n"].iloc[0]), rows
