"""Cases: production traces that look bad, as ``evallens cases mine`` ranks them, and a form to promote
them into an eval set for review."""

import pandas as pd
import streamlit as st

from dashboard import _ui, data
from evallens import cases
from evallens.cases.mining import REASONS, WEIGHTS
from evallens.errors import EvallensError
from evallens.markdown import literal

ctx = _ui.context()
st.title("Cases")
st.caption(
    "Production traces (never eval traffic) that look bad, worst first, exactly as `evallens cases mine` "
    "ranks them: points per signal ("
    + ", ".join(f"{REASONS[name]} {points:g}" for name, points in WEIGHTS.items())
    + "), near-duplicate questions merged, questions already in a set left out, personal data redacted. "
    "The rules: docs/feedback.md."
)
if not data.status.data_present(ctx.url, ctx.project)["spans"]:
    _ui.empty_state("spans")
    st.stop()

hours = int(_ui.window_hours("Window", data.status.traffic_extent(ctx.url, ctx.project)))
with st.spinner("Ranking the window's traces (the first time loads the embedding model)"):
    report = data.cases.candidates(ctx.url, ctx.project, hours, ctx.max_rows, ctx.readers)
if not report.candidates:
    st.success("No production trace in this window has negative feedback, an error, or an outlier.")
    st.stop()
table = pd.DataFrame(
    {
        "trace_id": [item.trace_id for item in report.candidates],
        "score": [item.score for item in report.candidates],
        "count": [item.count for item in report.candidates],
        "reasons": [", ".join(REASONS[reason] for reason in item.reasons) for item in report.candidates],
        "question": pd.Series([item.question for item in report.candidates], dtype=object),
        "start_time": [item.start_time for item in report.candidates],
        "latency_ms": [item.latency_ms for item in report.candidates],
        "cost_usd": [item.cost_usd for item in report.candidates],
        "feedback_score": [item.feedback_score for item in report.candidates],
    }
)
st.dataframe(
    table,
    hide_index=True,
    column_config={
        "question": st.column_config.TextColumn("question (redacted)"),
        "start_time": st.column_config.DatetimeColumn("start (UTC)", format="YYYY-MM-DD HH:mm"),
        "latency_ms": st.column_config.NumberColumn("latency (ms)", format="%.0f"),
        "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.5f"),
    },
)
st.caption(
    f"{report.num_traces} production traces (requests that asked a question) in the window,"
    f" {report.num_flagged} flagged, "
    f"{report.num_already_in_sets} already in a set, {len(report.candidates)} candidates."
)

st.header("Promote into an eval set")
if not ctx.can_write:
    st.info(
        "Promoting changes an eval set: sign in with the dashboard password or an API key with the "
        "write (or admin) scope. This key may only read.",
        icon=":material/lock:",
    )
    st.stop()
sets = data.cases.eval_sets(ctx.url, ctx.project)
if sets.empty:
    _ui.empty_state("sets")
    st.stop()
promotable = {item.trace_id: item for item in report.candidates if item.question}
selected = st.multiselect(
    "Traces to promote",
    list(promotable),
    format_func=lambda trace_id: f"{trace_id[:12]} · {str(promotable[trace_id].question)[:80]}",
)
for trace_id in selected:
    candidate = promotable[trace_id]
    st.markdown(f"`{trace_id[:12]}` will be stored as: {literal(candidate.question)}")
    st.caption(f"Redacted: {', '.join(candidate.question_redactions) or 'nothing to redact'}")

# outside the form: a widget in a form reruns nothing until submitted, so the scenarios listed would
# still be the previously chosen set's, and the one picked among them was not what got stored
left, right = st.columns(2)
set_name = str(left.selectbox("Eval set", list(sets["name"])))
known = data.cases.scenarios(ctx.url, ctx.project, set_name)
scenario = str(right.selectbox("Scenario", known or ["uncategorized"]))
with st.form("promote"):
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
        promoted = data.cases.promote(
            ctx.url,
            ctx.project,
            selected,
            eval_set_name=set_name,
            scenario=scenario,
            expected=expected,
            reference_answer=reference or None,
        )
    except EvallensError as error:  # messages quote set names, scenarios and trace ids as stored
        st.error(literal(error))
        st.stop()
    num_review = sum(case.status == cases.NEEDS_REVIEW for case in promoted.cases)
    st.success(
        f"Promoted {len(promoted.cases)} case(s) into {literal(promoted.eval_set_name)} "
        f"v{promoted.version}: {num_review} need review (`evallens cases review`), "
        f"{len(promoted.cases) - num_review} ready for eval runs: "
        + ", ".join(literal(case.case_key) for case in promoted.cases)
    )
    for case in promoted.cases:
        kinds = ", ".join(r.kind for r in case.question.redactions) or "nothing"
        question = literal(case.question.text)
        st.caption(f"{literal(case.case_key)} ({case.status}): {question} (redacted: {kinds})")
