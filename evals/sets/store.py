"""Store eval sets in PostgreSQL, one version per distinct content hash, and find them again."""

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from evallens.cases import lock_set_versions, set_content_hash
from evallens.db.models import EvalCase, EvalSet
from evallens.db.models.traces import DEFAULT_PROJECT
from evals.errors import EvalSetError
from evals.sets.format import CaseSpec, EvalSetSpec

MAX_VERSION = 2**31 - 1  # eval_sets.version is an INTEGER column


@dataclass(frozen=True)
class SyncedSet:
    """The stored version a set file maps to, whether this sync created it, and the set's latest version.

    ``latest_version`` is higher than ``version`` when the file holds the content of an older version
    (a reverted file, another branch's sync, a promotion since): ``NAME`` alone then replays other
    cases than the file's, and ``NAME@version`` replays the file's (``pinned``)."""

    name: str
    version: int
    eval_set_id: int
    content_hash: str
    num_cases: int
    created: bool
    latest_version: int

    @property
    def pinned(self) -> str:
        """The selector that replays exactly this file's cases."""
        return f"{self.name}@{self.version}"


def content_hash(eval_set: EvalSetSpec) -> str:
    """A hash of the cases' content, independent of file layout and case order."""
    return set_content_hash(case.model_dump(mode="json") for case in eval_set.cases)


def sync_set(session: Session, eval_set: EvalSetSpec, *, project: str = DEFAULT_PROJECT) -> SyncedSet:
    """Store ``eval_set`` as a new version unless a version with the same content exists."""
    lock_set_versions(session, eval_set.name, project)  # a promotion or another sync may be storing one
    digest = content_hash(eval_set)
    existing = session.scalars(
        select(EvalSet).where(
            EvalSet.project == project, EvalSet.name == eval_set.name, EvalSet.content_hash == digest
        )
    ).one_or_none()
    latest = session.scalar(
        select(func.max(EvalSet.version)).where(EvalSet.project == project, EvalSet.name == eval_set.name)
    )
    if existing is not None:
        return SyncedSet(
            eval_set.name,
            existing.version,
            existing.id,
            digest,
            len(eval_set.cases),
            False,
            latest or existing.version,
        )
    row = EvalSet(
        project=project,
        name=eval_set.name,
        version=(latest or 0) + 1,
        content_hash=digest,
        description=eval_set.description,
        source_path=eval_set.source_path,
    )
    session.add(row)
    session.flush()
    session.add_all(_case_row(row.id, case) for case in eval_set.cases)
    session.flush()
    return SyncedSet(eval_set.name, row.version, row.id, digest, len(eval_set.cases), True, row.version)


def _case_row(eval_set_id: int, case: CaseSpec) -> EvalCase:
    return EvalCase(
        eval_set_id=eval_set_id,
        case_key=case.id,
        scenario=case.scenario,
        question=case.question,
        messages=[m.model_dump() for m in case.messages] if case.messages is not None else None,
        reference_answer=case.reference_answer,
        required_facts=list(case.required_facts),
        reference_context_ids=list(case.reference_context_ids),
        expected_behavior=case.expected,
        tags=list(case.tags),
        source_trace_id=case.source_trace_id,
    )


def find_set_version(session: Session, selector: str, *, project: str = DEFAULT_PROJECT) -> EvalSet:
    """The stored set named by ``name`` (latest version) or ``name@version``."""
    name, _, version_text = selector.partition("@")
    query = select(EvalSet).where(EvalSet.project == project, EvalSet.name == name)
    if version_text:
        # isdigit() alone also passes '²', which int() refuses
        if not (version_text.isascii() and version_text.isdigit()):
            raise EvalSetError(f"'{selector}': the version after '@' must be a number")
        if int(version_text) > MAX_VERSION:  # PostgreSQL refuses to compare it with the column at all
            raise _no_stored_set(selector)
        query = query.where(EvalSet.version == int(version_text))
    row = session.scalars(query.order_by(EvalSet.version.desc()).limit(1)).one_or_none()
    if row is None:
        raise _no_stored_set(selector)
    return row


def _no_stored_set(selector: str) -> EvalSetError:
    return EvalSetError(f"no stored eval set '{selector}': run `evallens eval sets sync PATH` first")


def load_cases(session: Session, eval_set_id: int) -> list[EvalCase]:
    """The active cases of one stored set version, in case-key order."""
    query = (
        select(EvalCase)
        .where(EvalCase.eval_set_id == eval_set_id, EvalCase.status == "active")
        .order_by(EvalCase.case_key)
    )
    return list(session.scalars(query))


def case_spec(case: EvalCase) -> CaseSpec:
    """A stored case back as the file-format model (what the runner and metrics work on)."""
    return CaseSpec.model_validate(
        {
            "id": case.case_key,
            "scenario": case.scenario,
            "question": case.question,
            "messages": case.messages,
            "reference_answer": case.reference_answer,
            "required_facts": case.required_facts,
            "reference_context_ids": case.reference_context_ids,
            "expected": case.expected_behavior,
            "tags": case.tags,
            "source_trace_id": case.source_trace_id,
        }
    )
