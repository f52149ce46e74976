"""``evallens eval sets sync``: load, validate reference ids, store versions."""

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from evallens.credentials import masked_url
from evallens.db.models.traces import DEFAULT_PROJECT
from evals.sets.documents import check_reference_ids, document_ids_in_folder, document_ids_of_target
from evals.sets.load import load_sets
from evals.sets.store import SyncedSet, sync_set
from evals.target import check_url


@dataclass(frozen=True)
class SyncReport:
    """What a sync stored, and what the reference ids were checked against."""

    sets: list[SyncedSet]
    checked_against: str


def sync_path(
    session: Session,
    path: Path,
    *,
    docs_dir: Path | None = None,
    endpoint: str | None = None,
    api_key: str | None = None,
    project: str = DEFAULT_PROJECT,
) -> SyncReport:
    """Load every set under ``path``, check its reference ids, store a version per content hash in
    ``project``.

    Ids are checked against ``docs_dir`` (or a ``docs`` folder beside the sets), else against the
    target's ``GET /v1/documents`` (sent ``api_key``, if any) when it answers; otherwise they are not
    checked, and the report says so.
    """
    eval_sets = load_sets(path)
    known_ids, checked_against = _known_document_ids(path, docs_dir, endpoint, api_key)
    if known_ids is not None:
        for eval_set in eval_sets:
            check_reference_ids(eval_set, known_ids)
    synced = [sync_set(session, s, project=project) for s in eval_sets]
    return SyncReport(sets=synced, checked_against=checked_against)


def _known_document_ids(
    path: Path, docs_dir: Path | None, endpoint: str | None, api_key: str | None
) -> tuple[set[str] | None, str]:
    folder = docs_dir or _docs_beside(path)
    if folder is not None:
        return document_ids_in_folder(folder), f"docs folder {folder}"
    if endpoint is not None:
        ids = document_ids_of_target(check_url(endpoint, "--endpoint"), api_key=api_key)
        if ids is not None:
            return ids, f"knowledge base of {masked_url(endpoint)}"
    return None, "nothing (no docs folder given and no knowledge base reachable): ids not checked"


def _docs_beside(path: Path) -> Path | None:
    folder = path if path.is_dir() else path.parent
    for candidate in (folder / "docs", folder.parent / "docs"):
        if candidate.is_dir() and any(candidate.glob("*.md")):
            return candidate
    return None
