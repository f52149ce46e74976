"""The newest stored runs of a project, with their set, tags and outcome (``evallens eval runs``)."""

import uuid
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from evallens.db.models import EvalRun, EvalSet, EvalTag
from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.runs.liveness import fail_abandoned_runs


class RunListing(BaseModel):
    """One run as a list shows it."""

    run_id: uuid.UUID
    eval_set: str
    version: int
    label: str | None
    tags: list[str]
    status: str
    started_at: datetime
    finished_at: datetime | None
    endpoint: str
    num_cases: int | None
    num_errors: int | None
    error: str | None


def list_runs(
    session: Session, *, project: str = DEFAULT_PROJECT, eval_set_name: str | None = None, limit: int = 20
) -> list[RunListing]:
    """The ``limit`` newest runs of ``project`` (of one set when ``eval_set_name`` is given); a run whose
    process is gone is marked failed first (``fail_abandoned_runs``), never listed as running."""
    fail_abandoned_runs(session.get_bind().engine, project=project)
    query = (
        select(EvalRun, EvalSet.name, EvalSet.version)
        .join(EvalSet, EvalSet.id == EvalRun.eval_set_id)
        .where(EvalRun.project == project, EvalSet.project == project)  # a run names its set by id alone
        .order_by(EvalRun.started_at.desc())
        .limit(limit)
        .execution_options(populate_existing=True)  # a run this session loaded may have been marked since
    )
    if eval_set_name is not None:
        query = query.where(EvalSet.name == eval_set_name)
    rows = session.execute(query).all()
    tags: dict[uuid.UUID, list[str]] = {}
    ids = [run.id for run, _, _ in rows]
    for run_id, tag in session.execute(
        select(EvalTag.run_id, EvalTag.tag)
        .where(EvalTag.run_id.in_(ids), EvalTag.project == project)
        .order_by(EvalTag.tag)
    ):
        tags.setdefault(run_id, []).append(tag)
    return [
        RunListing(
            run_id=run.id, eval_set=name, version=version, label=run.label, tags=tags.get(run.id, []),
            status=run.status, started_at=run.started_at, finished_at=run.finished_at,
            endpoint=run.endpoint, num_cases=(run.summary or {}).get("num_cases"),
            num_errors=(run.summary or {}).get("num_errors"), error=run.error,
        )
        for run, name, version in rows
    ]  # fmt: skip
