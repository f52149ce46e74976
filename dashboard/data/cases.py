"""Bad production cases as ``evallens cases mine`` ranks them, the sets to promote them into, and the
promotion itself (the core function the CLI calls, in one transaction)."""

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import pandas as pd

from dashboard.data._db import cached, frame, reading, resource, writing
from evallens import cases
from evallens.cases.mining import MiningReport, Readers, embed_ahead, mine_cases, projects_with_traffic
from evallens.settings import CasesSettings

LOG = logging.getLogger(__name__)


@cached
def candidates(url: str, project: str, hours: int, limit: int, _readers: Readers) -> MiningReport:
    """The worst ``limit`` candidate cases of the last ``hours``: the same ranking, reasons, dedupe and
    redaction as ``evallens cases mine --since {hours}h``."""
    with reading(url) as session:
        return mine_cases(
            session, CasesSettings(), _readers, project=project, since=timedelta(hours=hours), limit=limit
        )


@dataclass
class EmbeddingAhead:
    """Every ``every_s`` seconds, embed the questions a Cases view of each window would embed, for
    every project with recent traffic: a view then embeds only questions of traces newer than the last
    pass. ``run`` is the body of a daemon thread; ``stop`` ends it."""

    url: str
    every_s: float
    windows: tuple[timedelta, ...]
    readers: Readers
    stop: threading.Event = field(default_factory=threading.Event)
    passes: int = 0  # passes finished, with or without an error
    embedded: int = 0  # texts embedded over all passes

    def run(self) -> None:
        while True:
            self.embedded += self._one_pass()
            self.passes += 1
            if self.stop.wait(self.every_s):
                return

    def _one_pass(self) -> int:
        embedded = 0
        try:
            with reading(self.url) as session:
                projects = projects_with_traffic(session, max(self.windows))
            for project in projects:
                with reading(self.url) as session:  # a transaction a project: its vectors commit at its end
                    count = embed_ahead(
                        session, CasesSettings(), self.readers, project=project, windows=list(self.windows)
                    )
                if count:
                    LOG.info("embedded %d questions of project %s ahead of the Cases page", count, project)
                embedded += count
        except Exception as error:  # noqa: BLE001 - a database restart or outage: the next pass tries again
            LOG.warning("embedding ahead failed (%s); trying again in %.0f s", error, self.every_s)
        return embedded


@resource(on_release=lambda ahead: ahead.stop.set())
def embedding_ahead(
    url: str, every_s: float, windows: tuple[timedelta, ...], _readers: Readers
) -> EmbeddingAhead:
    """Start ``EmbeddingAhead`` in a daemon thread, once per process and database."""
    ahead = EmbeddingAhead(url, every_s, windows, _readers)
    threading.Thread(target=ahead.run, name="embed-ahead", daemon=True).start()
    return ahead


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
