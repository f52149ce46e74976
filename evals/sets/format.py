"""The eval-set file format (docs/evalset-format.md) as pydantic models."""

import math
import sys
from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from evallens.errors import BLANK
from evallens.telemetry.messages import last_user_message

Expected = Literal["answer", "decline", "refuse"]
FactItem = str | int | float
FACT_SHAPE = "a fact is a string or a number, or a list of them as alternatives (any one satisfies it)"


def _fact_shape(value: object) -> object:
    """``value`` if it is shaped as a fact: pydantic words a union's refusal as its first option's
    ("Input should be a valid string" for a list nested too deep), and takes ``true`` as the fact 1."""
    if isinstance(value, list) and not value:
        raise ValueError(f"{FACT_SHAPE}, not an empty list")
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise ValueError(f"{FACT_SHAPE}, not {_kind(item)}")
    return value


def _kind(item: object) -> str:
    if isinstance(item, list):
        return "a list inside a list"
    if isinstance(item, dict):
        return "a key-value object"
    if item is None:
        return "null"
    if isinstance(item, bool | date):  # YAML reads yes, no, on, off and 2024-01-01 unquoted as these
        called = "the boolean" if isinstance(item, bool) else "the date"
        return f"{called} {str(item).lower()} (quote it to keep it as text)"
    return f"a {type(item).__name__}"


# A required fact, or a list of alternatives any one of which satisfies it (an any-of fact).
Fact = Annotated[FactItem | list[FactItem], BeforeValidator(_fact_shape)]


def nonblank_question(question: str) -> str:
    """``question``, or ``ValueError`` when it holds no text: no answer can be scored against it."""
    if not question.strip():
        raise ValueError(BLANK)
    return question


def blank_field(case: "CaseSpec") -> str | None:
    """Which of ``case``'s texts is blank where text is needed (``nonblank_question``), or None: the
    question, the reference answer of a case expected to answer, a required fact (no answer states an
    empty one: every answer would miss it) or a reference context id (no document has an empty id).
    Set files are checked as they are read, not by the model: a set version stored before the rule
    still loads to be run."""
    if not case.prompt_text().strip():
        if case.question is not None:
            return f"question: {BLANK}"
        return f"messages: the last user message (the question) {BLANK}"
    if case.expected == "answer" and not (case.reference_answer or "").strip():
        return f"reference_answer: {BLANK} in a case with expected 'answer'"
    index = blank_fact(case.required_facts)
    if index is not None:
        return f"required_facts.{index}: {BLANK}"
    for index, context_id in enumerate(case.reference_context_ids):
        if not context_id.strip():
            return f"reference_context_ids.{index}: {BLANK}"
    return None


def blank_fact(facts: list[Fact]) -> int | None:
    """The index of the first of ``facts`` that is blank, or holds a blank alternative, or None."""
    for index, fact in enumerate(facts):
        if any(
            isinstance(item, str) and not item.strip()
            for item in (fact if isinstance(fact, list) else [fact])
        ):
            return index
    return None


def writable_facts(facts: list[Fact]) -> list[Fact]:
    """``facts``, or ``ValueError`` for a number no answer can convey and no JSON can hold."""
    for fact in facts:
        for item in fact if isinstance(fact, list) else [fact]:
            if isinstance(item, float) and not math.isfinite(item):  # YAML .nan/.inf, JSON NaN/1e999
                raise ValueError(f"a number fact must be finite, not {item}")
            if isinstance(item, int):
                _check_decimal(item)
    return facts


def _check_decimal(number: int) -> None:
    # JSON and the scoring write an int in decimal, which Python refuses past its digit limit (YAML's
    # 0xfff... is read without that limit)
    try:
        str(number)
    except ValueError:
        limit = sys.get_int_max_str_digits()
        raise ValueError(f"a number fact cannot be longer than {limit} digits") from None


class Message(BaseModel):
    """One chat message of a multi-turn case."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str = Field(min_length=1)


class CaseSpec(BaseModel):
    """One case as written in a set file."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="unique within the set")
    scenario: str = Field(min_length=1)
    question: str | None = None
    messages: list[Message] | None = None
    reference_answer: str | None = None
    required_facts: list[Fact] = Field(default_factory=list)
    reference_context_ids: list[str] = Field(default_factory=list)
    expected: Expected = "answer"
    tags: list[str] = Field(default_factory=list)
    source_trace_id: str | None = Field(default=None, description="the production trace it came from")

    @field_validator("required_facts")
    @classmethod
    def _finite_numbers(cls, facts: list[Fact]) -> list[Fact]:
        return writable_facts(facts)

    @model_validator(mode="after")
    def _one_prompt(self) -> "CaseSpec":
        if (self.question is None) == (self.messages is None):
            raise ValueError("give exactly one of 'question' or 'messages'")
        if self.messages is not None and not any(m.role == "user" for m in self.messages):
            raise ValueError("'messages' needs at least one user message")
        if self.expected == "answer" and not self.reference_answer:
            raise ValueError("a case with expected 'answer' needs a 'reference_answer'")
        return self

    def chat_messages(self) -> list[dict[str, str]]:
        """The messages sent to the target."""
        if self.messages is not None:
            return [message.model_dump() for message in self.messages]
        return [{"role": "user", "content": self.question or ""}]

    def prompt_text(self) -> str:
        """The question the answer must address: the question, or the last user message."""
        if self.question is not None:
            return self.question
        return last_user_message(self.messages or []) or ""


class SetFile(BaseModel):
    """A YAML set file: a set name, a default scenario and the cases."""

    model_config = ConfigDict(extra="forbid")

    set: str = Field(min_length=1)
    scenario: str | None = None
    description: str | None = None
    cases: list[dict[str, object]] = Field(min_length=1)


class EvalSetSpec(BaseModel):
    """All cases of one named set, gathered from every file that names it."""

    name: str
    description: str | None = None
    source_path: str
    cases: list[CaseSpec]
