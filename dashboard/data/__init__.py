"""Every query and write of the dashboard, one module per page area; pages hold no SQL.

Queries are aggregates cached for ``CACHE_TTL_S`` seconds. The first argument is always the database
URL; every query of spans, runs, sets and gates also takes the project the login may see, so a login
never reads another project's rows (even by id), and that includes serving metrics: each scraped
sample belongs to the project its scrape target is bound to, and a series labelled with a project (the
answer caches' lookups) to that project only. Writes call the same core functions as
the CLI, in one transaction each. What the eval engine and the gate stored (summaries, verdicts,
baselines, flipped cases) is read, not recomputed.
"""

from dashboard.data import cases, quarantine, runs, serving, status, traffic
from dashboard.data._db import CACHE_TTL_S, database_url, reader, sign_in_limiter

__all__ = [
    "CACHE_TTL_S",
    "cases",
    "database_url",
    "quarantine",
    "reader",
    "runs",
    "serving",
    "sign_in_limiter",
    "status",
    "traffic",
]
