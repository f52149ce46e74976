"""Prometheus scraper: the service's and vLLM's ``/metrics`` into ``metric_samples``, every N seconds."""

import logging
import math
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, insert

from collector.stats import CollectorStats
from evallens.db.models.metrics import MetricSample
from evallens.telemetry.attributes import DEFAULT_PROJECT

logger = logging.getLogger(__name__)


def parse_samples(
    text: str, target: str, scraped_at: datetime, project: str = DEFAULT_PROJECT
) -> list[dict[str, Any]]:
    """Rows of ``metric_samples`` of ``project`` from a Prometheus text exposition (non-finite values
    skipped)."""
    rows = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not math.isfinite(sample.value):
                continue
            moment = datetime.fromtimestamp(float(sample.timestamp), UTC) if sample.timestamp else scraped_at
            rows.append(
                {
                    "time": moment,
                    "name": sample.name,
                    "labels": dict(sample.labels),
                    "value": float(sample.value),
                    "target": target,
                    "project": project,
                }
            )
    return rows


def scrape_target(client: httpx.Client, target: str, project: str = DEFAULT_PROJECT) -> list[dict[str, Any]]:
    """Fetch and parse one target; raises ``httpx.HTTPError`` or ``ValueError`` on failure."""
    response = client.get(target)
    response.raise_for_status()
    return parse_samples(response.text, target, datetime.now(UTC), project)


class Scraper:
    """A thread that scrapes every target each ``interval_s`` and stores what it got, in ``project``."""

    def __init__(
        self,
        engine: Engine,
        targets: Sequence[str],
        interval_s: float,
        timeout_s: float,
        stats: CollectorStats,
        project: str = DEFAULT_PROJECT,
    ) -> None:
        self._engine, self._targets, self._interval_s = engine, list(targets), interval_s
        self._project = project
        self._client = httpx.Client(timeout=timeout_s)
        self._stats = stats
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def scrape_once(self) -> int:
        """Scrape every target once; return how many samples were stored. A failing target is logged."""
        rows: list[dict[str, Any]] = []
        for target in self._targets:
            try:
                rows.extend(scrape_target(self._client, target, self._project))
            except (httpx.HTTPError, ValueError) as error:
                logger.warning("cannot scrape %s: %s", target, error)
        if rows:
            with self._engine.begin() as connection:
                connection.execute(insert(MetricSample), rows)
            self._stats.metric_samples_scraped.inc(len(rows))
        return len(rows)

    def start(self) -> None:
        """Scrape in the background until ``stop``."""
        if self._targets:
            self._thread = threading.Thread(target=self._run, name="collector-scraper", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop scraping and close the HTTP client."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.scrape_once()
            except Exception:  # PostgreSQL down or a bug: keep the scraper alive and say so
                logger.exception("scrape failed")
            self._stop.wait(self._interval_s)
