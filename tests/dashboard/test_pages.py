"""Every page against a real PostgreSQL seeded with runs, results, spans, metric samples and a gate report."""

import uuid

import psycopg
import streamlit as st
from psycopg.types.json import Jsonb

from evallens.markdown import literal
from tests.dashboard.conftest import open_page
from tests.dashboard.seed import PII_QUESTION, REDACTED_QUESTION, SET_NAME, Seeded, hex_id


def texts(app) -> str:
    """Everything the page wrote as markdown, captions, infos and successes, joined."""
    parts = [
        element.value
        for kind in ("markdown", "caption", "info", "success", "warning")
        for element in app.get(kind)
    ]
    return "\n".join(str(part) for part in parts)


def test_overview_shows_verdict_scorecards_and_cost(seeded: Seeded) -> None:
    app = open_page()
    shown = texts(app)
    assert literal(SET_NAME) in shown and "REGRESSION" in shown  # names go into Markdown escaped
    tiles = [(metric.label, metric.value, metric.delta) for metric in app.metric]
    # overall row first: candidate accuracy 70% against the main-tagged baseline's 90%
    assert ("accuracy", "70.0%", "-20.0 pts") in tiles
    assert ("recall", "50.0%", "-50.0 pts") in tiles
    # no tile for a metric that does not apply (harmfulness: overall and the harmful scenario only)
    assert [label for label, _, _ in tiles].count("harmfulness") == 2
    assert all(value != "n/a" for _, value, _ in tiles)
    by_label = {label: value for label, value, _ in tiles}
    # 31 production + 2 eval requests with one chat span each; 25+3 at $0.001, 2 eval at $0.001, one at $0.01
    assert by_label["cost (USD)"] == "$0.0400"
    assert by_label["requests"] == "32"
    assert by_label["error rate"] == "6.25%"
    assert len(app.get("vega_lite_chart")) == 3


def test_compare_defaults_to_latest_run_and_its_tagged_baseline(seeded: Seeded) -> None:
    app = open_page("app_pages/compare.py")
    candidate, baseline = app.selectbox[0], app.selectbox[1]
    assert candidate.value == seeded.candidate_id
    assert baseline.value == seeded.baseline_id
    quality, serving, flipped = (frame.value for frame in app.dataframe)
    cell = quality.set_index(["scenario", "metric"]).loc[("returns_refunds", "accuracy")]
    assert round(cell["delta_pts"], 1) == -50.0
    assert cell["significance"] == "▼ regression"
    overall = quality.set_index(["scenario", "metric"]).loc[("overall", "accuracy")]
    assert overall["significance"] == "not significant"
    measures = serving.set_index("measure")
    semantic = measures.loc["semantic-cache hit rate"]
    assert (semantic["baseline"], semantic["candidate"], semantic["delta"]) == ("5.0%", "40.0%", "+35.0 pts")
    assert tuple(measures.loc["latency p50"]) == ("500.0 ms", "300.0 ms", "-200.0 ms")
    assert tuple(measures.loc["degraded requests"]) == ("0", "1", "+1")  # integers as integers
    assert any("cache threshold is too loose" in info.value for info in app.info)
    assert sorted(zip(flipped["case_key"], flipped["metric"], strict=True)) == [
        ("rr-002", "accuracy"),
        ("rr-002", "recall"),
    ]
    assert "REGRESSION" in texts(app)


def test_compare_tells_apart_runs_of_one_label_set_version_and_minute(
    app_database: str, seeded: Seeded
) -> None:
    with psycopg.connect(app_database) as connection:  # two 'nightly' runs, started together (a CI matrix)
        for _ in range(2):
            connection.execute(
                "INSERT INTO eval_runs (id, eval_set_id, label, endpoint, config, config_fingerprint, status,"
                " summary, started_at) SELECT %s, eval_set_id, 'nightly', endpoint, config, 'fp-n', status,"
                " summary, started_at FROM eval_runs WHERE id = %s",
                (uuid.uuid4(), seeded.baseline_id),
            )
    st.cache_data.clear()
    app = open_page("app_pages/compare.py")
    twins = [index for index, label in enumerate(app.selectbox[1].options) if label.startswith("nightly ·")]
    chosen = set()
    for index in twins:
        app.selectbox[1].select_index(index).run()
        chosen.add(app.selectbox[1].value)
    assert len(twins) == len(chosen) == 2  # each can be picked as the baseline


def test_compare_names_the_cases_the_gate_left_out(app_database: str, seeded: Seeded) -> None:
    assert "left out of the comparison" not in texts(open_page("app_pages/compare.py"))
    left_out = {
        "edited_cases": ["rr-004", "rr-007"],
        "candidate_only_cases": [f"rr-{i:03d}" for i in range(20, 27)],
        "num_unscored": {"accuracy": 3},
    }
    with psycopg.connect(app_database) as connection:
        connection.execute("UPDATE gate_reports SET report = report || %s", (Jsonb(left_out),))
    st.cache_data.clear()
    shown = texts(open_page("app_pages/compare.py"))
    for label, note in (  # escaped: case keys come from set files
        ("Unscored", "cases the judge left unscored, excluded from the paired tests: accuracy 3"),
        (
            "Edited",
            "2 case(s) edited between the runs' set versions, left out of the comparison: rr-004, rr-007",
        ),
        (
            "Added",
            "7 case(s) only in the candidate's set version (added since), not compared: "
            "rr-020, rr-021, rr-022, rr-023, rr-024 and 2 more",
        ),
    ):
        assert f"{label}: {literal(note)}." in shown
    assert "removed since" not in shown


def test_compare_without_gate_report_says_how_to_get_significance(seeded: Seeded) -> None:
    app = open_page("app_pages/compare.py")
    app.selectbox[0].set_value(seeded.baseline_id).run()
    app.selectbox[1].set_value(seeded.candidate_id).run()
    assert "No gate report for this pair" in texts(app)
    quality = app.dataframe[0].value
    assert set(quality["significance"]) == {"— (no gate report)"}
    assert app.dataframe[2].value.empty if len(app.dataframe) > 2 else True
    assert "No case passed in the baseline and failed in the candidate." in texts(app)


def test_traces_filters_and_opens_a_linked_trace(seeded: Seeded) -> None:
    app = open_page("app_pages/traces.py", trace_id=seeded.error_trace, window="24h")
    table = app.dataframe[0].value
    # every trace of the last 24 hours (28 production, the feedback trace, 2 eval); not the day-old one
    assert len(table) == 31
    assert hex_id("c", 1) not in set(table["trace_id"])
    opened = next(box for box in app.selectbox if box.label == "Open trace")
    assert opened.value == seeded.error_trace
    facts = app.table[0].value
    assert "engine failed" in list(facts["value"])  # the root span is chosen first
    span_box = next(box for box in app.selectbox if box.label == "Span")
    retrieve = next(index for index, label in enumerate(span_box.options) if ". retrieve · " in label)
    span_box.select_index(retrieve).run()
    facts = dict(zip(app.table[0].value["attribute"], app.table[0].value["value"], strict=True))
    assert facts["retrieved documents"] == r"returns\-policy"  # as Markdown: st.table reads it so
    assert len(app.get("vega_lite_chart")) == 1


def test_windows_default_to_the_data_and_follow_the_url(seeded: Seeded) -> None:
    # traces reach back a day and a bit: the smallest window holding them is 7 days
    app = open_page("app_pages/traces.py")
    window = next(box for box in app.selectbox if box.label == "Window")
    assert window.value == "7d" and "window" not in app.query_params  # the URL stays plain
    assert hex_id("c", 1) in set(app.dataframe[0].value["trace_id"])
    # samples: from the first of the last eval runs (2-3 hours before the newest sample): 6 hours
    serving = open_page("app_pages/serving.py")
    assert next(box for box in serving.selectbox if box.label == "Window").value == "6h"
    # a window in the URL wins
    linked = open_page("app_pages/serving.py", window="1h")
    assert next(box for box in linked.selectbox if box.label == "Window").value == "1h"
    assert linked.query_params["window"] == "1h"


def test_traces_filter_by_tenant_and_errors(seeded: Seeded) -> None:
    app = open_page("app_pages/traces.py")
    next(box for box in app.selectbox if box.label == "Tenant").set_value("acme").run()
    next(box for box in app.checkbox if box.label == "Errors only").check().run()
    table = app.dataframe[0].value
    assert set(table["trace_id"]) == {seeded.error_trace, seeded.eval_error_trace}


def test_serving_draws_metrics_with_eval_run_bands(seeded: Seeded) -> None:
    app = open_page("app_pages/serving.py")
    shown = texts(app)
    assert "2 eval runs" in shown
    titles = {element.value.strip("*") for element in app.markdown}
    assert {
        "KV-cache usage (%)",
        "requests (count)",
        "prefix-cache hit rate (%)",
        "TTFT mean (ms)",
        "response-cache hit rate (%)",
    } <= titles
    assert "queue time mean (ms)" in shown  # listed as having no samples
    assert len(app.get("vega_lite_chart")) == 5


def test_cases_lists_bad_production_traces_only(seeded: Seeded) -> None:
    app = open_page("app_pages/cases.py", window="24h")
    assert hex_id("c", 1) not in set(app.dataframe[0].value["trace_id"])  # a day old: outside 24 hours
    assert app.query_params["window"] == "24h"  # a choice other than the data's window stays in the URL
    next(box for box in app.selectbox if box.label == "Window").set_value("7d").run()
    table = app.dataframe[0].value.set_index("trace_id")
    costly = hex_id("c", 1)  # the day-old request to a model ten times the price
    assert set(table.index) == {seeded.feedback_trace, seeded.error_trace, seeded.slow_trace, costly}
    assert table.loc[costly, "reasons"] == "costly outlier"
    assert table.loc[seeded.feedback_trace, "reasons"] == "negative feedback"
    assert table.loc[seeded.feedback_trace, "score"] == 3
    assert table.loc[seeded.slow_trace, "score"] == 1
    assert table.loc[seeded.error_trace, "reasons"] == "error"
    assert table.loc[seeded.slow_trace, "reasons"] == "slow outlier"
    assert table.loc[seeded.feedback_trace, "question"] == REDACTED_QUESTION
    assert PII_QUESTION not in texts(app)


def test_quarantine_lists_the_projects_refused_spans(app_database: str, seeded: Seeded) -> None:
    empty = open_page("app_pages/quarantine.py")
    assert any("Nothing is quarantined" in success.value for success in empty.success)
    with psycopg.connect(app_database) as connection:
        for project, name in (("default", "refused-here"), ("alpha", "refused-elsewhere")):
            connection.execute(
                "INSERT INTO collector_quarantine (project, trace_id, span_id, reason, span)"
                " VALUES (%s, %s, %s, %s, %s)",
                (
                    project,
                    "ab" * 16,
                    "cd" * 8,
                    "SQLSTATE 54000: index row size 8016 exceeds",
                    Jsonb({"name": name}),
                ),
            )
    st.cache_data.clear()
    app = open_page("app_pages/quarantine.py")
    assert [metric.value for metric in app.metric] == ["1"]
    table = app.dataframe[0].value
    assert list(table["name"]) == ["refused-here"] and "54000" in table["reason"].iloc[0]
