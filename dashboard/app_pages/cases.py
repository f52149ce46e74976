"""Cases: production traces that look bad, and a form to promote them into an eval set for review."""

import pandas as pd
import streamlit as st

from dashboard import _ui, data
from evallens import cases
from evallens.errors import EvallensError

REASONS = {
    "negative_feedback": "negative feedback",
    "error": "error",
    "timeout": "timed out",
    "degraded": "degraded",
    "no_citations": "cited no documents",
    "latency_outlier": "slow outlier",
    "cost_outlier": "costly outlier",
}

ctx = _ui.context()
st.title("Cases")
st.caption(
    "Production traces (never eval traffic) that look bad, worst first. Badness: 3 for negative feedback or "
    "an error, 2 for a timeout or degraded answer, 1 each for citing no documents and for latency or cost "
    "above max(p95, 2 × median) of the window."
)
if not data.data_present(ctx.url, ctx.project)["spans"]:
    _ui.empty_state("spans")
    st.stop()

hours = _ui.window_hours("Window", "last 24 hours", key="cases_window")
bad = data.bad_traces(ctx.url, ctx.project, hours, ctx.max_rows)
if bad.empty:
    st.success("No production trace in this window has negative feedback, an error, or an outlier.")
    st.stop()
questions = data.questions(ctx.url, ctx.project, tuple(bad["trace_id"]))
bad = bad.assign(
    question=pd.Series(
        [questions.get(trace_id) for trace_id in bad["trace_id"]], index=bad.index, dtype=object
    ),
    reasons=[
        ", ".join(label for column, label in REASONS.items() if row[column]) for _, row in bad.iterrows()
    ],
)
st.dataframe(
    bad[
        [
            "trace_id",
            "badness",
            "reasons",
            "question",
            "start_time",
            "latency_ms",
            "cost_usd",
            "feedback_score",
        ]
    ],
    hide_index=True,
    column_config={
        "start_time": st.column_config.DatetimeColumn("start (UTC)", format="YYYY-MM-DD HH:mm"),
        "latency_ms": st.column_config.NumberColumn("latency (ms)", format="%.0f"),
        "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.5f"),
    },
)

st.header("Promote into an eval set")
if not ctx.can_write:
    st.info(
        "Promoting changes an eval set: sign in with the dashboard password or an API key with the "
        "write (or admin) scope. This key may only read.",
        icon=":material/lock:",
    )
    st.stop()
sets = data.eval_sets(ctx.url, ctx.project)
if sets.empty:
    _ui.empty_state("sets")
    st.stop()
promotable = {row.trace_id: row.question for row in bad.itertuples() if row.question}
selected = st.multiselect(
    "Traces to promote",
    list(promotable),
    format_func=lambda trace_id: f"{trace_id[:12]} · {str(promotable[trace_id])[:80]}",
)
for trace_id in selected:
    redacted = cases.redact(str(promotable[trace_id]))
    kinds = ", ".join(r.kind for r in redacted.redactions) or "nothing to redact"
    st.markdown(f"`{trace_id[:12]}` will be stored as: {redacted.text}")
    st.caption(f"Redacted: {kinds}")

set_names = list(sets["name"])
with st.form("promote"):
    left, right = st.columns(2)
    set_name = str(left.selectbox("Eval set", set_names))
    known = data.scenarios(ctx.url, ctx.project, set_name)
    scenario = str(right.selectbox("Scenario", known or ["uncategorized"]))
    expected = st.radio("Expected behaviour", ["answer", "decline", "refuse"], horizontal=True)
    reference = st.text_area(
        "Reference answer (optional: 'answer' cases without one stay 'needs review' until reviewed)"
    )
    submitted = st.form_submit_button("Promote into a new set version", type="primary")

if submitted:
    if not selected:
        st.warning("Pick at least one trace to promote.")
        st.stop()
    try:
        with data.session(ctx.url) as db:
            report = cases.promote_traces(
                db,
                selected,
                eval_set_name=set_name,
                scenario=scenario,
                expected=expected,
                reference_answer=reference or None,
                project=ctx.project,
            )
            db.commit()
    except EvallensError as error:
        st.error(str(error))
        st.stop()
    data.clear_caches()
    num_review = sum(case.status == cases.NEEDS_REVIEW for case in report.cases)
    st.success(
        f"Promoted {len(report.cases)} case(s) into {report.eval_set_name} v{report.version}: "
        f"{num_review} need review (`evallens cases review`), {len(report.cases) - num_review} ready for "
        "eval runs: " + ", ".join(case.case_key for case in report.cases)
    )
    for case in report.cases:
        kinds = ", ".join(r.kind for r in case.question.redactions) or "nothing"
        st.caption(f"{case.case_key} ({case.status}): {case.question.text} (redacted: {kinds})")
