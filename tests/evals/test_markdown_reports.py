"""gate.md and calibration.md keep their tables and lists whatever text the sets, labels and answers hold."""

from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from evallens.reports import FlippedCase, GateReportBody, MetricComparison
from evals.calibrate.report import CalibrationReport, Disagreement, MetricCalibration
from evals.calibrate.stats import Agreement
from evals.compare.cells import OVERALL
from evals.compare.hints import config_changes, draw_hints
from evals.render.markdown import render_markdown

SCENARIO = "a | b\n- c"
HOSTILE = "a | b\n- c [link](http://x.test) *bold*"


def _tokens(markdown: str) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(markdown)


def _inline_text(tokens: list[Token], opening: str) -> list[str]:
    """The text of each inline token right after an ``opening`` token (a cell, a list item's paragraph)."""
    return [tokens[i + 1].content for i, token in enumerate(tokens[:-1]) if token.type == opening]


def _gate_body() -> GateReportBody:
    comparison = MetricComparison(
        scenario=SCENARIO, metric="accuracy", baseline=0.9, candidate=0.8, delta=-0.1, num_pairs=10,
        test="mcnemar", p_value=0.5, p_adjusted=0.5, significant=False, regression=False,
    )  # fmt: skip
    flip = FlippedCase(
        case_key="k`1\nx", scenario=SCENARIO, metric="accuracy", question=HOSTILE, reference_answer=None,
        baseline_response=None, candidate_response=HOSTILE, baseline_retrieved_ids=[],
        candidate_retrieved_ids=[], baseline_trace_id=None, candidate_trace_id=None,
    )  # fmt: skip
    return GateReportBody(
        verdict="pass", eval_set_name="s", baseline_run_id="b", candidate_run_id="c", min_effect=0.03,
        alpha=0.05, comparisons=[comparison], infra_baseline=None, infra_candidate=None, hints=[],
        flipped_cases=[flip, flip.model_copy(update={"case_key": "k2"})],
    )  # fmt: skip


def test_gate_markdown_keeps_one_row_per_cell_and_one_item_per_flipped_case() -> None:
    tokens = _tokens(render_markdown(_gate_body()))
    cells = _inline_text(tokens, "td_open")
    assert len(cells) == 12  # one row of twelve columns
    assert cells[0] == "a | b - c"
    assert sum(token.type == "list_item_open" for token in tokens) == 2
    assert not any(child.type == "link_open" for token in tokens for child in token.children or [])
    code_spans = [
        child.content for token in tokens for child in token.children or [] if child.type == "code_inline"
    ]
    assert code_spans[-2:] == ["k`1 x", "k2"]  # after the set and run ids


def test_gate_markdown_shows_a_hint_with_config_keys_and_values_as_written() -> None:
    body = _gate_body()
    baseline = {"model": "a|b", "system\nprompt": "be *brief*", "engine": {"top`k": 4}}
    candidate = {"model": "`c` | [d](http://x.test)", "system\nprompt": "be **long**", "engine": {"top`k": 8}}
    changes = config_changes(baseline, candidate)
    overall = body.comparisons[0].model_copy(update={"scenario": OVERALL})  # 10 points worse
    [hint] = draw_hints([overall], None, None, changes, body.min_effect)
    tokens = _tokens(render_markdown(body.model_copy(update={"hints": [hint]})))
    assert len(_inline_text(tokens, "td_open")) == 12  # the table keeps its one row
    first_item = next(i for i, token in enumerate(tokens) if token.type == "list_item_open")
    children = tokens[first_item + 2].children or []
    assert {child.type for child in children} <= {"text", "text_special"}  # no code, emphasis or link
    assert "".join(child.content for child in children) == hint.message.replace("\n", " ")
    assert "engine.top`k: 4 -> 8" in hint.message


def test_calibration_markdown_keeps_one_item_per_disagreement(tmp_path: Path) -> None:
    from evals.calibrate import write_calibration

    stats = Agreement(n=2, tp=1, fp=1, fn=0, tn=0, agreement=0.5, kappa=0.0, kappa_low=0.0, kappa_high=0.0)
    worst = [
        Disagreement("row`1\n| x", 0, 1, HOSTILE, "q", "r"),
        Disagreement("row2", 0, 1, "short", "q", "r"),
    ]
    report = CalibrationReport(
        "labels.jsonl", "rules", {}, metrics={"accuracy": MetricCalibration("accuracy", stats, 0, worst)}
    )
    write_calibration(report, tmp_path)
    tokens = _tokens((tmp_path / "calibration.md").read_text())
    assert len(_inline_text(tokens, "td_open")) == 10
    items = [tokens[i + 2].content for i, token in enumerate(tokens) if token.type == "list_item_open"]
    assert len(items) == 2
    assert not any(child.type == "link_open" for token in tokens for child in token.children or [])
    code_spans = [
        child.content for token in tokens for child in token.children or [] if child.type == "code_inline"
    ]
    assert code_spans == ["row`1 | x", "row2"]
