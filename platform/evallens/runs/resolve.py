"""Find a stored run by id, by tag or as the latest completed one of a configuration, tag it, and
say which run it is judged against."""

import uuid
from dataclasses import dataclass

from sqlalchemy import Text, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from evallens.db.models import EvalRun, EvalSet, EvalTag, GateReport
from evallens.db.models.traces import DEFAULT_PROJECT
from evallens.errors import EvallensError, refuse_blank
from evallens.runs.liveness import fail_abandoned_runs

MAIN_TAG = "main"  # the tag a baseline carries unless told otherwise


class RunNotFound(EvallensError):
    """A run id or tag that names no stored run."""


@dataclass(frozen=True)
class RunRef:
    """A resolved run with the name of its set."""

    run: EvalRun
    eval_set: EvalSet


def resolve_run(
    session: Session, reference: str, *, eval_set_name: str | None = None, project: str = DEFAULT_PROJECT
) -> RunRef:
    """The run of ``project`` named by a run id (or a unique id prefix) or by a tag (within
    ``eval_set_name`` if given). Another project's run is not found, even by its full id. A 'running' run
    whose process is gone is marked failed first (``fail_abandoned_runs``), so it is refused as failed."""
    run = _run_by_id(session, reference, project) or _run_by_tag(session, reference, eval_set_name, project)
    eval_set = None if run is None else _eval_set_of(session, run, project)
    if run is None or eval_set is None:
        raise RunNotFound(f"no run or tag '{reference}'")
    if run.status == "running" and fail_abandoned_runs(
        session.get_bind().engine, project=project, run_ids=[run.id]
    ):
        session.refresh(run)
    return RunRef(run=run, eval_set=eval_set)


def _eval_set_of(session: Session, run: EvalRun, project: str) -> EvalSet | None:
    """The set version ``run`` replayed, when it is one of ``project`` (a run's set is referenced by id
    alone: a row written by hand could name another project's)."""
    query = select(EvalSet).where(EvalSet.id == run.eval_set_id, EvalSet.project == project)
    return session.scalars(query).one_or_none()


def _run_by_id(session: Session, reference: str, project: str) -> EvalRun | None:
    query = select(EvalRun).where(EvalRun.project == project)
    try:
        return session.scalars(query.where(EvalRun.id == uuid.UUID(reference))).one_or_none()
    except ValueError:
        pass
    if len(reference) < 6 or any(c not in "0123456789abcdef-" for c in reference.lower()):
        return None
    matches = list(session.scalars(query.where(EvalRun.id.cast(Text).like(f"{reference.lower()}%"))))
    return matches[0] if len(matches) == 1 else None


def _run_by_tag(session: Session, tag: str, eval_set_name: str | None, project: str) -> EvalRun | None:
    query = select(EvalTag).where(EvalTag.project == project, EvalTag.tag == tag)
    if eval_set_name is not None:
        query = query.where(EvalTag.eval_set_name == eval_set_name)
    tags = list(session.scalars(query))
    if len(tags) > 1:
        raise RunNotFound(f"tag '{tag}' exists for several sets; give a run id")
    if not tags:
        return None
    return session.scalars(
        select(EvalRun).where(EvalRun.id == tags[0].run_id, EvalRun.project == project)
    ).one_or_none()


def latest_completed_run(
    session: Session,
    eval_set_id: int,
    fingerprint: str,
    *,
    scoring: dict[str, object],
    label: str | None = None,
) -> EvalRun | None:
    """The newest completed run of set version ``eval_set_id`` against the target configuration
    ``fingerprint``, scored as ``scoring`` describes (``evals.metrics.context.describe_scoring``; a run
    scored otherwise is no measurement of today's metrics), under ``label`` if given; None when there
    is none."""
    query = (
        select(EvalRun)
        .join(EvalSet, EvalSet.id == EvalRun.eval_set_id)
        .where(
            EvalRun.eval_set_id == eval_set_id,
            EvalRun.project == EvalSet.project,  # a run of the set's own project, never another's
            EvalRun.config_fingerprint == fingerprint,
            EvalRun.scoring == scoring,
            EvalRun.status == "completed",
        )
    )
    if label is not None:
        query = query.where(EvalRun.label == label)
    return session.scalars(query.order_by(EvalRun.started_at.desc()).limit(1)).first()


class BadTag(EvallensError):
    """A tag no one could type back: it starts or ends with whitespace."""


def check_tag(tag: str) -> str:
    """``tag`` when it can name a run; ``BlankText`` when it holds no text (stored, ``gate --baseline ''``
    found it, and an empty shell variable made a baseline nobody meant), ``BadTag`` when it starts or
    ends with whitespace ("main " was stored beside "main", and ``gate --baseline main`` read the other)."""
    refuse_blank({"tag": tag})
    if tag != tag.strip():
        raise BadTag(f"the tag {tag!r} starts or ends with whitespace: give it as {tag.strip()!r}")
    return tag


def tag_run(session: Session, reference: str, tag: str, *, project: str = DEFAULT_PROJECT) -> RunRef:
    """Point ``tag`` (e.g. ``main``) at a completed run of its set, replacing an earlier target."""
    check_tag(tag)
    ref = resolve_run(session, reference, project=project)
    if ref.run.status != "completed":
        raise RunNotFound(f"run {ref.run.id} is {ref.run.status}, only completed runs can be tagged")
    statement = insert(EvalTag).values(
        project=project, eval_set_name=ref.eval_set.name, tag=tag, run_id=ref.run.id
    )
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["project", "eval_set_name", "tag"], set_={"run_id": ref.run.id}
        )
    )
    return ref


def baseline_of(session: Session, run_id: str, project: str = DEFAULT_PROJECT) -> uuid.UUID | None:
    """The run a run is judged against: the baseline of its newest gate report, else its set's
    ``main`` tag, else the set's previous completed run; None when there is none."""
    run = _run_by_id(session, run_id, project)
    if run is None:
        return None
    # the baseline a gate or a tag names is a run of this project too: the foreign keys say so, and
    # so does the query, for a row written past them (a hand-made restore)
    gated = session.scalar(
        select(GateReport.baseline_run_id)
        .join(EvalRun, EvalRun.id == GateReport.baseline_run_id)
        .where(
            GateReport.candidate_run_id == run.id,
            GateReport.project == project,
            EvalRun.project == project,
        )
        .order_by(GateReport.created_at.desc())
        .limit(1)
    )
    if gated is not None:
        return gated
    eval_set = _eval_set_of(session, run, project)
    if eval_set is None:
        return None
    set_name = eval_set.name
    tagged = session.scalar(
        select(EvalTag.run_id)
        .join(EvalRun, EvalRun.id == EvalTag.run_id)
        .where(
            EvalTag.project == project,
            EvalTag.eval_set_name == set_name,
            EvalTag.tag == MAIN_TAG,
            EvalTag.run_id != run.id,
            EvalRun.project == project,
        )
    )
    if tagged is not None:
        return tagged
    return session.scalar(
        select(EvalRun.id)
        .join(EvalSet, EvalSet.id == EvalRun.eval_set_id)
        .where(
            EvalRun.project == project,
            EvalSet.project == project,
            EvalSet.name == set_name,
            EvalRun.started_at < run.started_at,
            EvalRun.status == "completed",
        )
        .order_by(EvalRun.started_at.desc())
        .limit(1)
    )
