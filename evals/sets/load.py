"""Read eval-set files (YAML or JSONL) into validated sets; every error names the file and the case."""

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from evallens.telemetry.messages import nul_path
from evals._jsonl import numbered_lines
from evals._text import SURROGATE_PROBLEM, number_too_long, surrogate_path
from evals.errors import EvalSetError
from evals.sets.format import CaseSpec, EvalSetSpec, SetFile, blank_field

SET_SUFFIXES = (".yaml", ".yml", ".jsonl")
NUL = "\x00"
SELECTOR_SEPARATOR = "@"  # evals.sets.store.find_set_version: NAME@VERSION


def load_sets(path: Path) -> list[EvalSetSpec]:
    """Every set found in ``path`` (a file, or a folder searched recursively), cases grouped by set name."""
    files = _set_files(path)
    grouped: dict[str, list[tuple[Path, CaseSpec]]] = {}
    descriptions: dict[str, str | None] = {}
    for file in files:
        for set_name, description, case in _read_file(file):
            grouped.setdefault(set_name, []).append((file, case))
            if description and not descriptions.get(set_name):
                descriptions[set_name] = description
    sets = []
    for name, located in sorted(grouped.items()):
        _reject_duplicates(name, located)
        sets.append(
            EvalSetSpec(
                name=name,
                description=descriptions.get(name),
                source_path=str(path),
                cases=[case for _, case in located],
            )
        )
    return sets


def _set_files(path: Path) -> list[Path]:
    if not path.exists():
        raise EvalSetError(f"{path}: no such file or folder")
    if path.is_file():
        if path.suffix not in SET_SUFFIXES:
            raise EvalSetError(f"{path}: not a set file (expected {', '.join(SET_SUFFIXES)})")
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SET_SUFFIXES)
    if not files:
        raise EvalSetError(f"{path}: no *.yaml, *.yml or *.jsonl set files")
    return files


def _read_file(file: Path) -> Iterator[tuple[str, str | None, CaseSpec]]:
    if file.suffix == ".jsonl":
        yield from _read_jsonl(file)
    else:
        yield from _read_yaml(file)


def _text(file: Path) -> str:
    try:
        return file.read_bytes().decode("utf-8-sig")  # a leading BOM (Notepad's UTF-8) is no text
    except UnicodeDecodeError as error:
        raise EvalSetError(
            f"{file}: not UTF-8 text (byte {error.start} is {error.object[error.start]:#04x})"
        ) from None


def _read_yaml(file: Path) -> Iterator[tuple[str, str | None, CaseSpec]]:
    text = _text(file)
    try:
        document = yaml.safe_load(text)
    except RecursionError:
        raise EvalSetError(f"{file}: nested too deeply to be an eval set") from None
    except yaml.reader.ReaderError as error:  # no problem_mark, and a message of several lines
        line = text.count("\n", 0, error.position) + 1
        raise EvalSetError(
            f"{file}: line {line} not valid YAML: character U+{error.character:04X} is not allowed"
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise EvalSetError(f"{file}:{where} not valid YAML: {getattr(error, 'problem', error)}") from None
    except ValueError as error:  # a scalar YAML resolves but Python cannot build (2024-13-45, a huge int)
        raise EvalSetError(f"{file}: not valid YAML: {str(error).split(';')[0]}") from None
    try:
        set_file = SetFile.model_validate(document)
    except ValidationError as error:
        raise EvalSetError(f"{file}: {_first_problem(error)}") from None
    _reject_unstorable(file, None, {"set": set_file.set, "description": set_file.description})
    _check_set_name(f"{file}: set", set_file.set)
    for index, raw in enumerate(set_file.cases):
        case = {"scenario": set_file.scenario, **raw} if set_file.scenario else dict(raw)
        yield set_file.set, set_file.description, _validate_case(file, case, f"case #{index + 1}")


def _read_jsonl(file: Path) -> Iterator[tuple[str, str | None, CaseSpec]]:
    lines = [(number, line) for number, line in numbered_lines(_text(file)) if line.strip()]
    if not lines:  # as an empty YAML file is: nothing would be stored, and sync would say nothing
        raise EvalSetError(f"{file}: no cases (the file is empty)")
    for number, line in lines:
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as error:
            raise EvalSetError(f"{file}: line {number}: not valid JSON: {error.msg}") from None
        except ValueError:  # valid JSON, but an integer too long for Python's int()
            raise EvalSetError(f"{file}: line {number}: {number_too_long()}") from None
        except RecursionError:
            raise EvalSetError(f"{file}: line {number}: nested too deeply to be a case") from None
        if not isinstance(raw, dict) or not isinstance(raw.get("set"), str) or not raw["set"]:
            raise EvalSetError(f"{file}: line {number}: each line needs an object with a 'set' name")
        set_name = raw.pop("set")
        _reject_unstorable(file, f"line {number}", {"set": set_name})
        _check_set_name(f"{file}: line {number}: set", set_name)
        raw.pop("description", None)
        yield set_name, None, _validate_case(file, raw, f"line {number}")


def _validate_case(file: Path, raw: dict[str, Any], position: str) -> CaseSpec:
    named = isinstance(raw.get("id"), str) and NUL not in raw["id"] and surrogate_path(raw["id"]) is None
    label = f"case '{raw['id']}'" if named else position
    try:
        case = CaseSpec.model_validate(raw)
    except ValidationError as error:
        raise EvalSetError(f"{file}: {label}: {_first_problem(error)}") from None
    blank = blank_field(case)
    if blank is not None:
        raise EvalSetError(f"{file}: {label}: {blank}")
    _reject_unstorable(file, label, case.model_dump(exclude_none=True))
    return case


def _reject_unstorable(file: Path, label: str | None, fields: dict[str, Any]) -> None:
    """PostgreSQL text and JSONB cannot hold NUL (YAML's ``"\\0"``, JSON's ``"\\u0000"``), nor any UTF-8
    text a lone surrogate (``"\\ud800"``): name the field."""
    prefix = f"{file}: {label}:" if label else f"{file}:"
    where = nul_path(fields)
    if where is not None:
        raise EvalSetError(f"{prefix} {where}: holds a NUL character (U+0000), which cannot be stored")
    where = surrogate_path(fields)
    if where is not None:
        raise EvalSetError(f"{prefix} {where}: {SURROGATE_PROBLEM}")


def _check_set_name(where: str, name: str) -> None:
    """A set is selected as ``NAME`` or ``NAME@VERSION`` and named on one line of every report."""
    if not name.strip():
        raise EvalSetError(f"{where}: a set name cannot be blank")
    if SELECTOR_SEPARATOR in name:
        raise EvalSetError(
            f"{where}: '{name}' holds '{SELECTOR_SEPARATOR}', which --set NAME@VERSION reads as a version"
        )
    if any(unicodedata.category(character) == "Cc" for character in name):
        raise EvalSetError(f"{where}: a set name cannot hold control characters (line breaks, tabs)")


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    message = problem["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _reject_duplicates(set_name: str, located: list[tuple[Path, CaseSpec]]) -> None:
    seen: dict[str, Path] = {}
    for file, case in located:
        if case.id in seen:
            raise EvalSetError(
                f"{file}: case '{case.id}': duplicate id in set '{set_name}' (also in {seen[case.id]})"
            )
        seen[case.id] = file
