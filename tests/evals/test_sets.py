"""Set loading, validation errors (one line, exit 2 through the CLI) and versioned sync."""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalCase, EvalSet
from evals.errors import EvalSetError
from evals.sets.load import load_sets
from evals.sets.store import find_set_version, load_cases
from evals.sets.sync import sync_path
from tests.evals.conftest import SETS, ScriptedTarget, run_cli


def test_yaml_and_jsonl_files_form_one_set() -> None:
    (eval_set,) = load_sets(SETS / "good")
    assert eval_set.name == "mini-support"
    by_id = {case.id: case for case in eval_set.cases}
    assert sorted(by_id) == ["h-001", "oos-001", "rr-001", "rr-002"]
    assert by_id["rr-002"].scenario == "returns_refunds"  # the file's default
    assert by_id["oos-001"].scenario == "out_of_scope"  # the case's override
    assert by_id["h-001"].expected == "refuse"
    assert by_id["rr-001"].chat_messages() == [
        {"role": "user", "content": "How many days do I have to return an unopened item?"}
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("set: x\ncases:\n  - id: a\n    question: [unclosed\n", "not valid YAML"),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q?\n",
            "case 'a1': a case with expected 'answer'",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: maybe\n",
            "case 'a1': expected",
        ),
        ("set: x\ncases:\n  - id: a1\n    question: q\n    expected: decline\n", "case 'a1': scenario"),
        ("cases: []\n", "set: Field required"),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            "    required_facts: [30, .nan]\n",
            "case 'a1': required_facts: a number fact must be finite, not nan",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            "    required_facts: [[a month, -.inf]]\n",
            "case 'a1': required_facts: a number fact must be finite, not -inf",
        ),
        # a blank question was stored, and replayed as an empty user message
        (
            'set: x\nscenario: s\ncases:\n  - id: a1\n    question: " \\t"\n    expected: decline\n',
            "case 'a1': question: cannot be empty or only whitespace",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    expected: decline\n    messages:\n"
            "      - {role: user, content: q}\n      - {role: assistant, content: a}\n"
            "      - {role: user, content: ' '}\n",
            "case 'a1': messages: the last user message (the question) cannot be empty or only whitespace",
        ),
        # a blank reference answer passed the check that an answer case has one, and every answer was
        # then scored against nothing
        (
            'set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    reference_answer: "  "\n',
            "case 'a1': reference_answer: cannot be empty or only whitespace in a case with expected "
            "'answer'",
        ),
        # a blank fact was stored, and missed by every answer; a blank context id matched no document
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            '    required_facts: [30 days, "  "]\n',
            "case 'a1': required_facts.1: cannot be empty or only whitespace",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            '    required_facts: [[a month, ""]]\n',
            "case 'a1': required_facts.0: cannot be empty or only whitespace",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            '    reference_context_ids: [returns-policy, ""]\n',
            "case 'a1': reference_context_ids.1: cannot be empty or only whitespace",
        ),
        # a union's refusal named only its first option ("required_facts.0.str: Input should be a valid
        # string"), and YAML's yes (true) and unquoted dates were stored as the fact 1, or refused so
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            "    required_facts: [[[x]]]\n",
            "case 'a1': required_facts.0: a fact is a string or a number, or a list of them as alternatives "
            "(any one satisfies it), not a list inside a list",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            "    required_facts: [x, yes]\n",
            "case 'a1': required_facts.1: a fact is a string or a number, or a list of them as alternatives "
            "(any one satisfies it), not the boolean true (quote it to keep it as text)",
        ),
        (
            "set: x\nscenario: s\ncases:\n  - id: a1\n    question: q\n    expected: decline\n"
            "    required_facts: [[x, 2024-02-29], {a: 1}]\n",
            "case 'a1': required_facts.0: a fact is a string or a number, or a list of them as alternatives "
            "(any one satisfies it), not the date 2024-02-29 (quote it to keep it as text)",
        ),
    ],
)
def test_malformed_files_name_file_and_case(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    with pytest.raises(EvalSetError) as error:
        load_sets(tmp_path)
    assert str(error.value).startswith(f"{path}:")
    assert expected in str(error.value)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_jsonl_strings_keep_unicode_line_separators(tmp_path: Path, separator: str) -> None:
    # JSON leaves these raw inside strings (`eval sets export --format jsonl` writes them so): only
    # a line feed or carriage return ends a line of the file.
    question = f"first{separator}second"
    case = {"set": "s", "id": "a", "scenario": "x", "question": question, "reference_answer": "r"}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(case, ensure_ascii=False) + "\r\n" + json.dumps({**case, "id": "b"}) + "\n")
    (eval_set,) = load_sets(path)
    assert [(c.id, c.question) for c in eval_set.cases] == [("a", question), ("b", question)]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.yaml", 'set: x\ncases:\n  - {id: a1, scenario: s, question: "q\\0", expected: decline}\n',
         "case 'a1': question: holds a NUL character"),
        ("a.jsonl", '{"set": "x", "id": "a1", "scenario": "s", "question": "q", "tags": ["t\\u0000"],'
         ' "expected": "decline"}\n', "case 'a1': tags.0: holds a NUL character"),
        ("a.jsonl", '{"set": "x\\u0000", "id": "a1", "scenario": "s", "question": "q",'
         ' "expected": "decline"}\n', "line 1: set: holds a NUL character"),
        ("a.yaml", 'set: x\ndescription: "d\\0"\ncases:\n  - {id: a1, scenario: s, question: q,'
         ' expected: decline}\n', "description: holds a NUL character"),
    ],
)  # fmt: skip
def test_nul_characters_are_refused_before_the_database(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(EvalSetError) as error:
        load_sets(path)
    assert str(error.value).startswith(f"{path}: ") and expected in str(error.value), error.value
    assert "\x00" not in str(error.value)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("a.jsonl", '{"set": "x", "id": "a1", "scenario": "s", "question": "q", "tags": ["t\\ud800"],'
         ' "expected": "decline"}\n', "case 'a1': tags.0: holds a lone UTF-16 surrogate"),
        ("a.jsonl", '{"set": "x\\udfff", "id": "a1", "scenario": "s", "question": "q",'
         ' "expected": "decline"}\n', "line 1: set: holds a lone UTF-16 surrogate"),
        ("a.yaml", 'set: x\ncases:\n  - {id: a1, scenario: s, question: "q\\ud800", expected: decline}\n',
         "case 'a1': question: holds a lone UTF-16 surrogate"),
        ("a.jsonl", '{"set": "x", "id": "a1", "scenario": "s", "question": "q", "required_facts": ['
         + "9" * 5000 + '], "reference_answer": "a"}\n', "line 1: a number longer than 4300 digits"),
        ("a.yaml", "set: x\ncases:\n  - {id: a1, scenario: s, question: q, reference_answer: a,"
         " required_facts: [" + "9" * 5000 + "]}\n", "not valid YAML: Exceeds the limit (4300 digits)"),
        ("a.yaml", "set: x\ncases:\n  - {id: a1, scenario: s, question: q, reference_answer: a,"
         " required_facts: [0x" + "f" * 5000 + "]}\n",
         "case 'a1': required_facts: a number fact cannot be longer than 4300 digits"),
        ("a.yaml", "set: x\ncases:\n  - {id: a1, scenario: s, question: q, expected: decline,"
         " tags: [2024-13-45]}\n", "not valid YAML: month must be in 1..12"),
    ],
)  # fmt: skip
def test_text_and_numbers_no_database_can_hold_are_refused_naming_the_field(
    tmp_path: Path, name: str, content: str, expected: str
) -> None:
    """JSON's and YAML's \\ud800 escapes decode to a lone surrogate, which psycopg and JSONB refuse, and
    Python reads no integer of over 4300 digits: each was a traceback from `eval sets sync`."""
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(EvalSetError) as error:
        load_sets(path)
    assert str(error.value).startswith(f"{path}: ") and expected in str(error.value), error.value


@pytest.mark.parametrize(
    ("set_name", "expected"),
    [
        ("support@2", "'support@2' holds '@', which --set NAME@VERSION reads as a version"),
        ("support@next", "'support@next' holds '@'"),
        ("  ", "a set name cannot be blank"),
        ("support\nreturns", "a set name cannot hold control characters"),
    ],
)
def test_a_set_name_no_selector_can_name_is_refused(tmp_path: Path, set_name: str, expected: str) -> None:
    """``--set support@2`` would select version 2 of 'support', and a name over two lines breaks every
    one-line report: such names are refused in both file formats, naming the file."""
    case = {"id": "a1", "scenario": "s", "question": "q", "expected": "decline"}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"set": set_name, "cases": [case]}))
    (tmp_path / "b.jsonl").write_text(json.dumps({"set": set_name, **case}) + "\n")
    for path, where in ((tmp_path / "a.yaml", "set"), (tmp_path / "b.jsonl", "line 1: set")):
        with pytest.raises(EvalSetError) as error:
            load_sets(path)
        assert str(error.value).startswith(f"{path}: {where}: {expected}")


def test_a_jsonl_file_saved_with_a_byte_order_mark_loads_as_yaml_does(tmp_path: Path) -> None:
    """Windows editors save UTF-8 with a BOM: YAML reads past it, and JSONL refused line 1 with
    Python's own advice ('decode using utf-8-sig')."""
    case = {"set": "s", "id": "a", "scenario": "x", "question": "q", "expected": "decline"}
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(case).encode() + b"\r\n")
    (eval_set,) = load_sets(path)
    assert (eval_set.name, [c.id for c in eval_set.cases]) == ("s", ["a"])


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_jsonl_file_is_an_error_as_an_empty_yaml_file_is(tmp_path: Path, content: str) -> None:
    (tmp_path / "empty.yaml").write_text(content)
    (tmp_path / "empty.jsonl").write_text(content)
    with pytest.raises(EvalSetError, match="empty.yaml: Input should be a valid dictionary"):
        load_sets(tmp_path / "empty.yaml")
    with pytest.raises(EvalSetError, match="empty.jsonl: no cases"):
        load_sets(tmp_path / "empty.jsonl")


def test_duplicate_case_ids_across_files(tmp_path: Path) -> None:
    shutil.copy(SETS / "good" / "returns.yaml", tmp_path / "a.yaml")
    shutil.copy(SETS / "good" / "returns.yaml", tmp_path / "b.yaml")
    with pytest.raises(EvalSetError, match="case 'rr-001': duplicate id in set 'mini-support'"):
        load_sets(tmp_path)


def test_malformed_file_is_one_line_and_exit_2(database_url: str, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"set": "x", "id": "a", "question": "q", "expected": "decline"\n')
    result = run_cli("eval", "sets", "sync", str(tmp_path), database_url=database_url)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"evallens: error: {tmp_path / 'bad.jsonl'}: line 1: not valid JSON: Expecting ',' delimiter"
    ]


def test_a_blank_fact_is_one_line_exit_2_and_stores_no_set(
    database_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text('{"set": "x", "id": "a", "scenario": "s", "question": "q", "expected": "decline", '
                    '"required_facts": ["30 days", " "]}\n')  # fmt: skip
    result = run_cli("eval", "sets", "sync", str(path), database_url=database_url)
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip().splitlines() == [
        f"evallens: error: {path}: case 'a': required_facts.1: cannot be empty or only whitespace"
    ]
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(EvalSet)) == 0


def test_unknown_document_ids_are_one_line_and_exit_2(database_url: str, tmp_path: Path) -> None:
    shutil.copytree(SETS / "good", tmp_path / "sets")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "returns-policy.md").write_text("# Returns\n")
    result = run_cli("eval", "sets", "sync", str(tmp_path / "sets"), database_url=database_url)
    assert result.returncode == 2, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert "case 'rr-002'" in line and "unknown document id(s) refund-timing" in line
    assert "version" not in result.stdout


def test_sync_stores_a_version_per_content_hash(sessions: sessionmaker[Session], tmp_path: Path) -> None:
    shutil.copytree(SETS / "good", tmp_path / "sets")
    shutil.copytree(SETS / "docs", tmp_path / "docs")
    with sessions.begin() as session:
        first = sync_path(session, tmp_path / "sets")
    assert first.checked_against.startswith("docs folder")
    with sessions.begin() as session:
        again = sync_path(session, tmp_path / "sets")
    assert [(s.version, s.created) for s in first.sets] == [(1, True)]
    assert [(s.version, s.created) for s in again.sets] == [(1, False)]

    path = tmp_path / "sets" / "returns.yaml"
    path.write_text(path.read_text().replace("within 30 days of delivery", "within 30 days of receipt"))
    with sessions.begin() as session:
        changed = sync_path(session, tmp_path / "sets")
    assert [(s.version, s.created) for s in changed.sets] == [(2, True)]

    with sessions() as session:
        v1, latest = find_set_version(session, "mini-support@1"), find_set_version(session, "mini-support")
        assert (v1.version, latest.version) == (1, 2)
        answers = {c.case_key: c.reference_answer for c in load_cases(session, v1.id)}
        assert "delivery" in (answers["rr-001"] or "")
        assert session.scalar(select(func.count()).select_from(EvalCase)) == 8
        assert session.scalar(select(func.count()).select_from(EvalSet)) == 2
        with pytest.raises(EvalSetError, match="no stored eval set 'mini-support@3'"):
            find_set_version(session, "mini-support@3")


def test_a_reverted_file_is_synced_to_its_old_version_and_replayed_by_its_pinned_selector(
    database_url: str, scripted_target: ScriptedTarget, tmp_path: Path
) -> None:
    """A file back at an older content (a reverted commit, or main after a pull request's branch synced
    its own) maps to the older version while `eval run --set NAME` replays the latest: sync says so and
    names the selector that replays the file's own cases; a CI job reads it from `--json`."""
    shutil.copytree(SETS / "good", tmp_path / "sets")
    shutil.copytree(SETS / "docs", tmp_path / "docs")
    path = tmp_path / "sets" / "returns.yaml"
    original = path.read_text()

    def sync(*options: str) -> str:
        result = run_cli("eval", "sets", "sync", str(tmp_path / "sets"), *options, database_url=database_url)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "not the latest" not in sync()
    path.write_text(original.replace("within 30 days of delivery", "within 30 days of receipt"))
    assert "mini-support: version 2 (new version, 4 cases)" in sync()
    path.write_text(original)
    lines = sync().splitlines()
    assert lines[0] == "mini-support: version 1 (unchanged, 4 cases)"
    assert "`eval run --set mini-support` replays version 2" in lines[1]
    assert lines[1].endswith("replay this file's cases with --set mini-support@1")
    (synced,) = json.loads(sync("--json"))["sets"]
    assert (synced["pinned"], synced["created"], synced["latest_version"]) == ("mini-support@1", False, 2)
    ran = run_cli(
        "eval", "run", "--set", synced["pinned"], "--endpoint", scripted_target.url, "--json",
        database_url=database_url,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["version"] == 1


@pytest.mark.parametrize("selector", ["mini-support@\u00b2", "mini-support@99999999999999999999"])
def test_a_version_no_integer_column_holds_is_one_line(
    sessions: sessionmaker[Session], selector: str
) -> None:
    with sessions() as session, pytest.raises(EvalSetError, match=f"'{selector}'"):
        find_set_version(session, selector)


def test_ids_checked_against_the_targets_knowledge_base(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, tmp_path: Path
) -> None:
    shutil.copytree(SETS / "good", tmp_path / "sets")
    scripted_target.documents = ["returns-policy"]
    with sessions.begin() as session, pytest.raises(EvalSetError, match="unknown document id.*refund-timing"):
        sync_path(session, tmp_path / "sets", endpoint=scripted_target.url)
    scripted_target.documents = ["returns-policy", "refund-timing"]
    with sessions.begin() as session:
        report = sync_path(session, tmp_path / "sets", endpoint=scripted_target.url)
    assert report.checked_against == f"knowledge base of {scripted_target.url}"


@pytest.mark.parametrize(
    "listing",
    ['{"documents": [{"name": "returns-policy"}]}', '{"documents": ' + "[" * 100_000 + "]" * 100_000 + "}"],
)
def test_a_knowledge_base_listing_without_ids_leaves_them_unchecked(
    sessions: sessionmaker[Session], scripted_target: ScriptedTarget, tmp_path: Path, listing: str
) -> None:
    shutil.copytree(SETS / "good", tmp_path / "sets")
    scripted_target.raw_documents = listing
    with sessions.begin() as session:
        report = sync_path(session, tmp_path / "sets", endpoint=scripted_target.url)
    assert report.checked_against.startswith("nothing") and [s.created for s in report.sets] == [True]
