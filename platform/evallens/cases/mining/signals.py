"""Why a production trace looks bad, and how bad: the documented badness score (docs/feedback.md)."""

import re
from collections.abc import Callable
from dataclasses import dataclass

from evallens.cases.mining._query import TraceFacts
from evallens.telemetry.messages import first_text

# Points per signal; negative feedback scales with how negative it is (-1 gives the full 3 points).
WEIGHTS = {
    "negative_feedback": 3.0,
    "error": 3.0,
    "timeout": 2.0,
    "degraded": 2.0,
    "refusal": 2.0,
    "no_citations": 1.0,
    "latency_outlier": 1.0,
    "cost_outlier": 1.0,
}
# What each signal means, as the dashboard and docs/feedback.md say it.
REASONS = {
    "negative_feedback": "negative feedback",
    "error": "error",
    "timeout": "timed out",
    "degraded": "degraded",
    "refusal": "refused or did not know",
    "no_citations": "cited no documents",
    "latency_outlier": "slow outlier",
    "cost_outlier": "costly outlier",
}

_DONT_KNOW = re.compile(
    r"\b(i (?:don'?t|do not) know|i(?:'m| am) not sure|i (?:could not|couldn'?t|can'?t|cannot) find"
    r"|no (?:relevant )?information (?:about|on|in)"
    r"|(?:don'?t|do not) have (?:enough )?(?:information|details))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class BadTrace:
    """A production trace with the reasons it looks bad and its badness score."""

    facts: TraceFacts
    question: str | None
    answer: str | None
    reasons: tuple[str, ...]
    score: float


def says_no(answer: str, refuses_or_declines: Callable[[str], bool]) -> bool:
    """The answer refuses, declines (as ``refuses_or_declines`` reads it) or says it does not know."""
    return refuses_or_declines(answer) or bool(_DONT_KNOW.search(answer))


def judge(facts: TraceFacts, refuses_or_declines: Callable[[str], bool]) -> BadTrace | None:
    """The trace's reasons and score, or None when nothing about it is bad."""
    question = first_text(facts.question_values, "user")
    answer = first_text(facts.answer_values, "assistant")
    points: dict[str, float] = {}
    if facts.feedback_score is not None and facts.feedback_score < 0:
        points["negative_feedback"] = WEIGHTS["negative_feedback"] * min(1.0, -facts.feedback_score)
    flags = {
        "error": facts.error,
        "timeout": facts.timeout,
        "degraded": facts.degraded,
        # a guard's decline or refusal is the intended answer to an out-of-scope or harmful question
        "refusal": bool(answer) and not facts.guarded and says_no(answer or "", refuses_or_declines),
        "no_citations": facts.no_citations,
        "latency_outlier": facts.latency_outlier,
        "cost_outlier": facts.cost_outlier,
    }
    points.update({name: WEIGHTS[name] for name, flagged in flags.items() if flagged})
    if not points:
        return None
    return BadTrace(facts, question, answer, tuple(points), round(sum(points.values()), 3))
