"""Set versions built from stored cases, and the one content hash shared with ``eval sets sync``.

A version whose cases are all ``active`` hashes exactly like the set file that holds those cases, so
exporting it and syncing the file maps back to the same version. A version that also holds
``needs_review`` or ``rejected`` cases hashes the active cases' hash together with those cases, so it
can never collide with a synced file's hash.
"""

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from evallens.cases.errors import UnknownEvalSet, VersionExists
from evallens.db.models import EvalCase, EvalSet

ACTIVE = "active"
NEEDS_REVIEW = "needs_review"
REJECTED = "rejected"
# First key of the two-key advisory locks on set names (a key space apart from other advisory locks).
SET_VERSION_LOCKS = 0x6573  # "es"
_COPIED_COLUMNS = tuple(
    column.key for column in EvalCase.__table__.columns if column.key not in {"id", "eval_set_id"}
)


def case_document(case: EvalCase) -> dict[str, Any]:
    """A stored case in the set-file format (``docs/evalset-format.md``), as sync would hash it."""
    document: dict[str, Any] = {
        "id": case.case_key,
        "scenario": case.scenario,
        "question": case.question,
        "messages": case.messages,
        "reference_answer": case.reference_answer,
        "required_facts": list(case.required_facts or []),
        "reference_context_ids": list(case.reference_context_ids or []),
        "expected": case.expected_behavior,
        "tags": list(case.tags or []),
        "source_trace_id": case.source_trace_id,
    }
    return document


def set_content_hash(documents: Iterable[Mapping[str, Any]]) -> str:
    """The hash of a set's cases, independent of file layout and case order (what sync stores)."""
    cases = sorted((_canonical(document) for document in documents), key=lambda case: str(case["id"]))
    payload = json.dumps(cases, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def _canonical(document: Mapping[str, Any]) -> dict[str, Any]:
    # A case without a source trace hashes as it did before the field existed.
    return {key: value for key, value in document.items() if key != "source_trace_id" or value is not None}


def version_hash(cases: Sequence[EvalCase]) -> str:
    """The content hash of a version holding ``cases`` (see the module docstring)."""
    active_hash = set_content_hash(case_document(case) for case in cases if case.status == ACTIVE)
    pending = [{**case_document(case), "status": case.status} for case in cases if case.status != ACTIVE]
    if not pending:
        return active_hash
    payload = {"active": active_hash, "pending": sorted(pending, key=lambda case: str(case["id"]))}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def latest_eval_set(session: Session, name: str, project: str = "default") -> EvalSet:
    """The newest version of set ``name``, or ``UnknownEvalSet``."""
    eval_set = session.scalars(
        select(EvalSet)
        .where(EvalSet.project == project, EvalSet.name == name)
        .order_by(EvalSet.version.desc())
        .limit(1)
    ).first()
    if eval_set is None:
        raise UnknownEvalSet(f"no eval set named {name!r}; run `evallens eval sets sync` first")
    return eval_set


def lock_set_versions(session: Session, name: str, project: str = "default") -> None:
    """Wait for, and hold until the transaction ends, the one writer's lock on set ``name`` of ``project``.

    A promotion or review builds the next version from the latest one: a second writer must read the
    latest version only after the first one committed, or both store the same version number (a unique
    violation, not a clear error) and one writer's cases would be lost. Take it before
    ``latest_eval_set``."""
    session.execute(
        text("SELECT pg_advisory_xact_lock(:space, hashtext(:key))"),
        {"space": SET_VERSION_LOCKS, "key": f"{project}/{name}"},
    )


def set_cases(session: Session, eval_set_id: int) -> list[EvalCase]:
    """Every case of one version, whatever its status, in case-key order."""
    query = select(EvalCase).where(EvalCase.eval_set_id == eval_set_id).order_by(EvalCase.case_key)
    return list(session.scalars(query))


def copy_case(case: EvalCase, **changes: Any) -> EvalCase:
    """An unsaved copy of ``case`` for a new version, with ``changes`` applied."""
    values = {key: getattr(case, key) for key in _COPIED_COLUMNS}
    return EvalCase(**{**values, **changes})


def store_version(session: Session, source: EvalSet, cases: list[EvalCase]) -> EvalSet:
    """Store ``cases`` as the version after ``source`` (the latest); the caller commits."""
    digest = version_hash(cases)
    existing = session.scalar(
        select(EvalSet.version).where(
            EvalSet.project == source.project, EvalSet.name == source.name, EvalSet.content_hash == digest
        )
    )
    if existing is not None:
        raise VersionExists(f"{source.name} v{existing} already holds exactly this content")
    target = EvalSet(
        project=source.project,
        name=source.name,
        version=source.version + 1,
        content_hash=digest,
        description=source.description,
        source_path=source.source_path,
    )
    session.add(target)
    session.flush()
    for case in cases:
        case.eval_set_id = target.id
    session.add_all(cases)
    session.flush()
    return target
