"""Traces: filter, open one, read its span waterfall and the attributes of the chosen span."""

import re

import streamlit as st

from dashboard import _ui, charts, data, transform
from evallens.markdown import literal

ALL = "(all)"
TRACE_ID = re.compile(r"[0-9a-f]{32}")  # as the collector stores them

ctx = _ui.context()
st.title("Traces")
if not data.status.data_present(ctx.url, ctx.project)["spans"]:
    _ui.empty_state("spans")
    st.stop()

# lower case: as a viewer that shows capitals may have copied it
linked_trace = st.query_params.get("trace_id", "").strip().lower() or None
if linked_trace is not None and not TRACE_ID.fullmatch(linked_trace):
    # never echoed: a crafted link must not write on the page
    st.warning("The link's trace_id is not a trace id (32 hexadecimal digits), so it opens none.")
    linked_trace = None
with st.expander("Filters", expanded=linked_trace is None):
    row1 = st.columns(5)
    with row1[0]:
        hours = int(_ui.window_hours("Window", data.status.traffic_extent(ctx.url, ctx.project)))
    options = data.traffic.trace_filter_options(ctx.url, ctx.project, hours)
    model = row1[1].selectbox("Model", [ALL, *options["model"]])
    tenant = row1[2].selectbox("Tenant", [ALL, *options["tenant"]])
    feature = row1[3].selectbox("Feature", [ALL, *options["feature"]])
    eval_run = row1[4].selectbox("Eval run", [ALL, *options["eval_run"]])
    row2 = st.columns(3)
    min_latency_ms = row2[0].number_input("Latency at least (ms)", min_value=0.0, value=0.0, step=100.0)
    min_cost_usd = row2[1].number_input(
        "Cost at least (USD)", min_value=0.0, value=0.0, step=0.001, format="%.4f"
    )
    errors_only = row2[2].checkbox("Errors only")


def chosen(value: object) -> str | None:
    return None if value == ALL else str(value)


found = data.traffic.traces(
    ctx.url,
    ctx.project,
    hours,
    model=chosen(model),
    tenant=chosen(tenant),
    feature=chosen(feature),
    eval_run=chosen(eval_run),
    errors_only=errors_only,
    min_latency_ms=float(min_latency_ms),
    min_cost_usd=float(min_cost_usd),
    limit=ctx.max_rows,
)
st.caption(f"{len(found)} traces (newest first, at most {ctx.max_rows}).")
st.dataframe(
    found,
    hide_index=True,
    column_config={
        "start_time": st.column_config.DatetimeColumn("start (UTC)", format="YYYY-MM-DD HH:mm:ss"),
        "latency_ms": st.column_config.NumberColumn("latency (ms)", format="%.1f"),
        "cost_usd": st.column_config.NumberColumn("cost (USD)", format="$%.5f"),
    },
)

trace_ids = list(found["trace_id"])
if linked_trace and linked_trace not in trace_ids:
    trace_ids.insert(0, linked_trace)
if not trace_ids:
    st.info("No trace matches these filters. Widen the window or clear a filter.")
    st.stop()
trace_id = str(
    st.selectbox("Open trace", trace_ids, index=trace_ids.index(linked_trace) if linked_trace else 0)
)
spans = data.traffic.trace_spans(ctx.url, ctx.project, trace_id)
if spans.empty:
    st.warning(f"No spans stored for trace {trace_id}.")
    st.stop()

frame = transform.waterfall(spans)
st.subheader(f"Trace {trace_id}")
st.altair_chart(charts.waterfall(frame), width="stretch")
# by row, not span id: a client may send one span id twice in a trace (other start times, both stored);
# numbered, since a selectbox tells its options apart by label (the last of equal labels wins)
span_labels = frame["label"].str.strip()
row = st.selectbox("Span", list(frame.index), format_func=lambda row: f"{row + 1}. {span_labels[row]}")
span = frame.loc[row]
facts_col, raw_col = st.columns(2)
with facts_col:
    st.markdown(f"**{literal(span['name'])}**")
    facts = transform.span_facts(span)  # st.table reads its cells as Markdown
    st.table({"attribute": list(facts), "value": ["—" if v is None else literal(v) for v in facts.values()]})
with raw_col:
    st.markdown("**All attributes**")
    st.json(span["attributes"], expanded=True)
    if span["events"]:
        st.markdown("**Events**")
        st.json(span["events"], expanded=False)
