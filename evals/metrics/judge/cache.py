"""Judge verdicts cached in PostgreSQL by (judge model, prompt version, question, reference, answer)."""

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
    """One verdict with everything that decided it."""

    key: str
    judge_model: str
    prompt_version: str
    question: str
    reference: str
    answer: str
    verdict: bool
    reason: str


def cache_key(judge_model: str, prompt_version: str, question: str, reference: str, answer: str) -> str:
    """The sha256 of everything that decides a verdict."""
    material = json.dumps([judge_model, prompt_version, question, reference, answer], ensure_ascii=False)
    return hashlib.sha256(material.encode()).hexdigest()


def load_verdicts(session: Session, keys: Iterable[str]) -> dict[str, tuple[bool, str]]:
    """The cached verdicts among ``keys``: key -> (verdict, reason)."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = session.execute(
        select(JudgeVerdict.key, JudgeVerdict.verdict, JudgeVerdict.reason).where(
            JudgeVerdict.key.in_(wanted)
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
