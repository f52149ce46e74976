"""Write a stored set version back to the YAML/JSONL file format (docs/evalset-format.md)."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from sqlalchemy.orm import Session

from evallens.cases import ACTIVE, set_cases
from evals._files import write_text_whole
from evals.errors import EvalSetError
from evals.sets.store import case_spec, find_set_version

ExportFormat = Literal["yaml", "jsonl"]


@dataclass(frozen=True)
class ExportReport:
    """What was written: the set version, the file, and the cases left out because not active."""

    eval_set_name: str
    version: int
    path: Path
    num_cases: int
    num_left_out: int


def export_set(session: Session, selector: str, fmt: ExportFormat, out: Path, project: str) -> ExportReport:
    """Write the active cases of ``selector`` (``NAME`` or ``NAME@VERSION``) to ``out``.

    Syncing the written file maps back to the same version when every case of it is active.
    """
    if not out.parent.is_dir():
        raise EvalSetError(f"--out {out}: the folder {out.parent} does not exist")
    eval_set = find_set_version(session, selector, project=project)
    stored = set_cases(session, eval_set.id)
    active = [case_document(case) for case in stored if case.status == ACTIVE]
    if fmt == "yaml":
        document: dict[str, Any] = {"set": eval_set.name}
        if eval_set.description:
            document["description"] = eval_set.description
        document["cases"] = active
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)
    else:
        text = "".join(
            json.dumps({"set": eval_set.name, **case}, ensure_ascii=False) + "\n" for case in active
        )
    try:
        write_text_whole(out, text)
    except OSError as error:
        raise EvalSetError(f"--out {out}: cannot write the file ({error.strerror or error})") from None
    return ExportReport(eval_set.name, eval_set.version, out, len(active), len(stored) - len(active))


def case_document(case: Any) -> dict[str, Any]:
    """A stored case as written in a set file: the file-format model without empty fields."""
    spec = case_spec(case).model_dump(mode="json", exclude_none=True)
    return {key: value for key, value in spec.items() if value != [] or key == "id"}
