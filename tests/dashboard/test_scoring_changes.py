"""Runs scored differently (``eval_runs.scoring``): marked in the overview's trend, warned of on compare."""

import json
import uuid
from datetime import timedelta
from typing import Any

import psycopg
import streamlit as st
from psycopg.types.json import Jsonb
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from tests.dashboard.conftest import open_page
from tests.dashboard.seed import SET_NAME, Seeded, summary
from tests.dashboard.test_pages import texts

SCORING: dict[str, object] = {
    "metrics_code": "abc",
    "similarity": "MiniLmSimilarity",
    "settings": {"similarity_threshold": 0.225},
    "judge": None,
    "harm_classifier": None,
}
RETRAINED = {**SCORING, "metrics_code": "def", "harm_classifier": "manifest 0123"}
REPLAY = f"`evallens eval run --set {SET_NAME} --tag main`"


def set_scoring(url: str, scoring: dict[str, dict[str, object] | None]) -> None:
    """Store each run's scoring description (None: stored before runs recorded it); forget cached queries."""
    with psycopg.connect(url) as connection:
        for run_id, description in scoring.items():
            connection.execute(
                "UPDATE eval_runs SET scoring = %s WHERE id = %s",
                (None if description is None else Jsonb(description), run_id),
            )
    st.cache_data.clear()


def add_run(url: str, seeded: Seeded, label: str, hours_ago: float, scoring: dict[str, object]) -> None:
    """A completed run of the seeded set (no results: the trend reads summaries only)."""
    with psycopg.connect(url) as connection:
        connection.execute(
            "INSERT INTO eval_runs (id, eval_set_id, label, endpoint, config, config_fingerprint, scoring,"
            " status, summary, started_at) VALUES (%s, %s, %s, 'http://127.0.0.1:8000', '{}', 'fp-c', %s,"
            " 'completed', %s, %s)",
            (
                uuid.uuid4(),
                seeded.eval_set_id,
                label,
                Jsonb(scoring),
                Jsonb(summary(0.8, 0.5, 0.5)),
                seeded.now - timedelta(hours=hours_ago),
            ),
        )
    st.cache_data.clear()


def trend_markers(app: Any) -> dict[str, str]:
    """The overview trend's scoring markers as sent to the browser: run label -> the rule's label."""
    trend = next(chart for chart in app.get("vega_lite_chart") if "rate (%)" in chart.proto.spec)
    layers = json.loads(trend.proto.spec).get("layer", [])
    rule_data = {layer["data"]["name"] for layer in layers if layer["mark"]["type"] == "rule"}
    markers: dict[str, str] = {}
    for dataset in trend.proto.datasets:
        if dataset.name in rule_data:
            rows = convert_arrow_bytes_to_pandas_df(dataset.data.data)
            for run, marker in zip(rows["run"], rows["marker"], strict=True):
                markers[run.split(" ")[0]] = marker  # "candidate 12-03 15:05" -> "candidate"
    return markers


def test_the_trend_marks_each_run_scored_differently_from_the_one_before(
    app_database: str, seeded: Seeded
) -> None:
    unrecorded = open_page()  # both seeded runs were stored before runs recorded their scoring: alike
    assert trend_markers(unrecorded) == {}
    assert REPLAY not in texts(unrecorded)
    set_scoring(app_database, {seeded.candidate_id: SCORING})
    add_run(app_database, seeded, "same", 1.5, SCORING)
    add_run(app_database, seeded, "retrained", 1, RETRAINED)
    app = open_page()
    assert trend_markers(app) == {
        "candidate": "scoring changed: recorded from this run on",
        "retrained": "scoring changed: harm_classifier, metrics_code",
    }
    caption = next(caption.value for caption in app.caption if REPLAY in caption.value)
    assert "scores on either side of a rule are not comparable" in caption


def test_compare_warns_of_runs_scored_differently_and_only_then(app_database: str, seeded: Seeded) -> None:
    set_scoring(app_database, {seeded.baseline_id: SCORING, seeded.candidate_id: RETRAINED})
    app = open_page("app_pages/compare.py")
    assert (app.selectbox[0].value, app.selectbox[1].value) == (seeded.candidate_id, seeded.baseline_id)
    [warning] = app.warning
    assert warning.value.startswith(
        "Runs baseline and candidate are not comparable: they were scored differently "
        "(harm_classifier, metrics_code changed)"
    )
    assert REPLAY in warning.value
    assert app.dataframe, "the comparison is still shown, below the warning"

    set_scoring(app_database, {seeded.candidate_id: SCORING})
    assert not open_page("app_pages/compare.py").warning

    set_scoring(app_database, {seeded.baseline_id: None})
    [warning] = open_page("app_pages/compare.py").warning
    assert "run baseline was stored before runs recorded how they were scored" in warning.value
