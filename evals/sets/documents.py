"""Check that every reference context id of a set names a document the target actually has."""

from pathlib import Path
from typing import Any

import httpx

from evals.errors import EvalSetError
from evals.sets.format import EvalSetSpec
from evals.target import api_url


def document_ids_in_folder(docs_dir: Path) -> set[str]:
    """Document ids of a docs folder: the stems of its ``*.md`` files."""
    if not docs_dir.is_dir():
        raise EvalSetError(f"{docs_dir}: docs folder not found")
    return {path.stem for path in docs_dir.glob("*.md")}


def document_ids_of_target(
    endpoint: str, *, api_key: str | None = None, timeout_s: float = 10.0
) -> set[str] | None:
    """Document ids from the target's ``GET /v1/documents`` (a service with auth lists ``api_key``'s
    project's documents only); None when the target cannot tell."""
    headers = {} if api_key is None else {"authorization": f"Bearer {api_key}"}
    try:
        response = httpx.get(api_url(endpoint, "/documents"), headers=headers, timeout=timeout_s)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return _ids_from_listing(response.json())
    except (ValueError, LookupError, RecursionError):  # not JSON, no list, an item without an id
        return None


def _ids_from_listing(body: Any) -> set[str]:
    if isinstance(body, dict):
        for key in ("documents", "data", "items", "ids"):
            if key in body:
                return _ids_from_listing(body[key])
        raise ValueError("no list of documents in the response")
    if not isinstance(body, list):
        raise ValueError("documents listing is not a list")
    return {str(item["id"]) if isinstance(item, dict) else str(item) for item in body}


def check_reference_ids(eval_set: EvalSetSpec, known_ids: set[str]) -> None:
    """Raise one line naming the first case that cites a document id not in ``known_ids``."""
    for case in eval_set.cases:
        unknown = sorted(set(case.reference_context_ids) - known_ids)
        if unknown:
            raise EvalSetError(
                f"{eval_set.source_path}: set '{eval_set.name}' case '{case.id}': "
                f"unknown document id(s) {', '.join(unknown)} (knowledge base has {len(known_ids)} documents)"
            )
