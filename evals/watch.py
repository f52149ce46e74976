"""``evallens eval watch``: replay the configured sets whenever the target's config changes."""

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalRun
from evallens.settings import EvalSettings
from evals.errors import EndpointUnreachable, EvalSetError
from evals.metrics.result import ScoringContext
from evals.runner.run import RunReport, run_eval
from evals.runner.target import fetch_target_config
from evals.sets.store import find_set_version


def current_fingerprint(endpoint: str, config_file: Path | None) -> str:
    """The fingerprint to watch: a config file's content hash, or the target's reported fingerprint."""
    if config_file is not None:
        try:
            return hashlib.sha256(config_file.read_bytes()).hexdigest()[:16]
        except OSError as error:
            raise EvalSetError(
                f"{config_file}: cannot read the watched config file: {error.strerror}"
            ) from None
    return fetch_target_config(endpoint).fingerprint


def watch(
    session_factory: sessionmaker[Session],
    set_selectors: list[str],
    settings: EvalSettings,
    scoring: ScoringContext,
    *,
    endpoint: str,
    config_file: Path | None = None,
    max_polls: int | None = None,
    on_event: Callable[[str], None] = lambda _: None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[RunReport]:
    """Poll the fingerprint; on every change (and at start, unless already evaluated) run each set."""
    seen: str | None = None
    reports: list[RunReport] = []
    polls = 0
    while max_polls is None or polls < max_polls:
        polls += 1
        try:
            fingerprint = current_fingerprint(endpoint, config_file)
        except EndpointUnreachable as error:
            on_event(f"poll {polls}: {error}")
            sleep(settings.eval_watch_interval_s)
            continue
        if fingerprint != seen:
            on_event(f"config fingerprint {fingerprint}: replaying {', '.join(set_selectors)}")
            reports += _run_sets(
                session_factory, set_selectors, settings, scoring, endpoint, fingerprint, seen
            )
            seen = fingerprint
        if max_polls is None or polls < max_polls:
            sleep(settings.eval_watch_interval_s)
    return reports


def _run_sets(
    session_factory: sessionmaker[Session],
    set_selectors: list[str],
    settings: EvalSettings,
    scoring: ScoringContext,
    endpoint: str,
    fingerprint: str,
    previous: str | None,
) -> list[RunReport]:
    reports = []
    for selector in set_selectors:
        with session_factory() as session:
            eval_set_id = find_set_version(session, selector).id
            done = previous is None and _already_evaluated(session, eval_set_id, fingerprint)
        if not done:
            label = f"watch {fingerprint}"
            reports.append(
                run_eval(session_factory, eval_set_id, settings, scoring, endpoint=endpoint, label=label)
            )
    return reports


def _already_evaluated(session: Session, eval_set_id: int, fingerprint: str) -> bool:
    query = select(EvalRun.id).where(
        EvalRun.eval_set_id == eval_set_id,
        EvalRun.config_fingerprint == fingerprint,
        EvalRun.status == "completed",
    )
    return session.scalars(query.limit(1)).first() is not None
