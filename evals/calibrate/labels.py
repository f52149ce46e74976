"""The label file: one JSON object a line (docs/calibration.md); a bad row is one error naming its line."""

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evallens.errors import BLANK
from evals._jsonl import numbered_lines
from evals._text import SURROGATE_PROBLEM, number_too_long, surrogate_path
from evals.errors import CalibrationError
from evals.metrics.result import Answer
from evals.sets.format import CaseSpec, Fact, blank_fact, nonblank_question, writable_facts

CalibratedMetric = Literal["accuracy", "irrelevance", "harmfulness"]
APPLIES_TO = {
    "accuracy": {"answer"},
    "irrelevance": {"answer", "decline"},
    "harmfulness": {"answer", "decline", "refuse"},
}


class LabelRow(BaseModel):
    """One hand-labelled answer: ``label`` is 1 for the metric's positive class."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    metric: CalibratedMetric
    question: str
    reference: str | None = None
    required_facts: list[Fact] = Field(default_factory=list)
    expected: Literal["answer", "decline", "refuse"] = "answer"
    response: str
    label: Literal[0, 1]
    line: int = Field(default=0, exclude=True)

    @field_validator("label", mode="before")
    @classmethod
    def _no_booleans(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("label must be 0 or 1")
        return value

    @field_validator("question")
    @classmethod
    def _question(cls, question: str) -> str:
        return nonblank_question(question)

    @field_validator("required_facts")
    @classmethod
    def _writable_facts(cls, facts: list[Fact]) -> list[Fact]:
        return writable_facts(facts)

    @property
    def name(self) -> str:
        """The row's id, or its line number."""
        return self.id or f"line {self.line}"

    def case(self) -> CaseSpec:
        """The row as an eval case (a reference may be absent, so the set-file rules do not apply)."""
        return CaseSpec.model_construct(
            id=self.name, scenario="calibration", question=self.question, messages=None,
            reference_answer=self.reference or None, required_facts=list(self.required_facts),
            reference_context_ids=[], expected=self.expected, tags=[], source_trace_id=None,
        )  # fmt: skip

    def answer(self) -> Answer:
        """The labelled response as the answer to score."""
        return Answer(text=self.response)


def load_labels(path: Path) -> list[LabelRow]:
    """Every row of ``path``; raises ``CalibrationError`` at the first bad line."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading BOM (Notepad's UTF-8) is no text
    except OSError as error:
        raise CalibrationError(f"{path}: cannot read the label file ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise CalibrationError(f"{path}: not UTF-8 text") from None
    rows: list[LabelRow] = []
    seen: set[str] = set()
    for number, line in numbered_lines(text):
        if line.strip():
            row = _parse(path, number, line)
            if row.id is not None and row.id in seen:
                raise CalibrationError(f"{path}:{number}: duplicate id '{row.id}'")
            seen.add(row.id or "")
            rows.append(row)
    if not rows:
        raise CalibrationError(f"{path}: no labelled rows")
    return rows


def _parse(path: Path, number: int, line: str) -> LabelRow:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as error:
        raise CalibrationError(f"{path}:{number}: not valid JSON ({error.msg})") from None
    except ValueError:  # valid JSON, but an integer too long for Python's int()
        raise CalibrationError(f"{path}:{number}: {number_too_long()}") from None
    except RecursionError:
        raise CalibrationError(f"{path}:{number}: nested too deeply to be a labelled row") from None
    if not isinstance(raw, dict):
        raise CalibrationError(f"{path}:{number}: expected a JSON object")
    where = surrogate_path(raw)
    if where is not None:
        raise CalibrationError(f"{path}:{number}: {where}: {SURROGATE_PROBLEM}")
    try:
        row = LabelRow.model_validate({**raw, "line": number})
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "row"
        message = problem["msg"].removeprefix("Value error, ")  # as the set loader words it
        raise CalibrationError(f"{path}:{number}: {where}: {message}") from None
    blank = blank_fact(row.required_facts)  # no answer states an empty fact: every answer would miss it
    if blank is not None:
        raise CalibrationError(f"{path}:{number}: required_facts.{blank}: {BLANK}")
    if row.expected not in APPLIES_TO[row.metric]:
        raise CalibrationError(
            f"{path}:{number}: metric '{row.metric}' does not apply to expected '{row.expected}'"
        )
    return row
