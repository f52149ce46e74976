"""Judge verdicts cached in PostgreSQL by (project, judge model, prompt version, question, reference,
answer): a project's replays never read verdicts on another project's questions and answers."""

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from evallens.db.models import JudgeVerdict
from evallens.telemetry.messages import clean_text


@dataclass(frozen=True)
class CachedVerdict:
    """One verdict with everything that decided it, and the project that asked for it."""

    key: str
    project: str
    judge_model: str
    prompt_version: str
    question: str
    reference: str
    answer: str
    verdict: bool
    reason: str


def cache_key(
    project: str, judge_model: str, prompt_version: str, question: str, reference: str, answer: str
) -> str:
    """The sha256 of everything that decides a verdict, and of the project it is cached for."""
    material = json.dumps(
        [project, judge_model, prompt_version, question, reference, answer], ensure_ascii=False
    )
    return hashlib.sha256(material.encode()).hexdigest()


def load_verdicts(session: Session, project: str, keys: Iterable[str]) -> dict[str, tuple[bool, str]]:
    """The verdicts cached for ``project`` among ``keys``: key -> (verdict, reason)."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = session.execute(
        select(JudgeVerdict.key, JudgeVerdict.verdict, JudgeVerdict.reason).where(
            JudgeVerdict.project == project, JudgeVerdict.key.in_(wanted)
        )
    )
    return {key: (verdict, reason) for key, verdict, reason in rows}


def store_verdicts(session: Session, verdicts: Iterable[CachedVerdict]) -> None:
    """Cache verdicts; a key already cached keeps its first verdict."""
    # the key is of the text as asked; what is stored cannot hold NUL (sampled answers, judge replies can)
    rows = [
        {name: clean_text(value) if isinstance(value, str) else value for name, value in vars(row).items()}
        for row in verdicts
    ]
    if rows:
        session.execute(insert(JudgeVerdict).values(rows).on_conflict_do_nothing(index_elements=["key"]))
