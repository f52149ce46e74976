"""Bad production cases as ``evallens cases mine`` ranks them, the sets to promote them into, and the
promotion itself (the core function the CLI calls, in one transaction)."""

from collections.abc import Sequence
from datetime import timedelta

import pandas as pd

from dashboard.data._db import cached, frame, reading, writing
from evallens import cases
from evallens.cases.mining import MiningReport, Readers, mine_cases
from evallens.settings import CasesSettings


@cached
def candidates(url: str, project: str, hours: int, limit: int, _readers: Readers) -> MiningReport:
    """The worst ``limit`` candidate cases of the last ``hours``: the same ranking, reasons, dedupe and
    redaction as ``evallens cases mine --since {hours}h``."""
    with reading(url) as session:
        return mine_cases(
            session, CasesSettings(), _readers, project=project, since=timedelta(hours=hours), limit=limit
        )


def promote(
    url: str,
    project: str,
    trace_ids: Sequence[str],
    *,
    eval_set_name: str,
    scenario: str,
    expected: cases.Expected,
    reference_answer: str | None,
) -> cases.PromotionReport:
    """Promote traces into a new version of the set, exactly as ``evallens cases promote`` does."""
    with writing(url) as session:
        return cases.promote_traces(
            session,
            trace_ids,
            eval_set_name=eval_set_name,
            scenario=scenario,
            expected=expected,
            reference_answer=reference_answer,
            project=project,
        )


@cached
def eval_sets(url: str, project: str) -> pd.DataFrame:
    """The latest version of each eval set with its number of cases and of cases awaiting review."""
    return frame(
        url,
        """
        SELECT DISTINCT ON (s.name) s.name, s.version, count(c.id) AS num_cases,
               count(c.id) FILTER (WHERE c.status = 'needs_review') AS num_needs_review
        FROM eval_sets s LEFT JOIN eval_cases c ON c.eval_set_id = s.id
        WHERE s.project = :p GROUP BY s.id ORDER BY s.name, s.version DESC
        """,
        p=project,
    )


@cached
def scenarios(url: str, project: str, eval_set_name: str) -> list[str]:
    """Scenarios used by the latest version of a set."""
    found = frame(
        url,
        "SELECT DISTINCT c.scenario FROM eval_cases c WHERE c.eval_set_id = (SELECT id FROM eval_sets"
        " WHERE project = :p AND name = :n ORDER BY version DESC LIMIT 1) ORDER BY 1",
        p=project,
        n=eval_set_name,
    )
    return [str(value) for value in found["scenario"]]
