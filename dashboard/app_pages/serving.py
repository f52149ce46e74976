"""Serving metrics over time, with eval runs drawn as bands so regressions line up with the server."""

import streamlit as st

from dashboard import _ui, charts, data, transform

ctx = _ui.context()
st.title("Serving metrics")
st.caption(
    "KV-cache usage, prefix-cache and response-cache hit rates, TTFT, queue time and requests, from the "
    "collector's scrapes. Shaded bands are eval runs; the window ends at the newest sample. Counts grow "
    "from each series' last value before the window; a fall is a restart, counted from zero."
)
if not data.status.data_present(ctx.url, ctx.project)["samples"]:
    _ui.empty_state("samples")
    st.stop()

hours = _ui.window_hours("Window", data.status.samples_extent(ctx.url, ctx.project), finest="15m")
window = data.serving.metrics_window(ctx.url, ctx.project, hours)
if window is None:
    _ui.empty_state("samples")
    st.stop()
    raise SystemExit  # st.stop() raises; this tells the type checker
start, end = window
bucket_s = data.serving.bucket_width_s(hours, data.serving.POINTS_PER_CHART)
panels = transform.serving_panels(
    data.serving.gauge_series(ctx.url, ctx.project, start, end, bucket_s),
    data.serving.counter_increases(ctx.url, ctx.project, start, end, bucket_s),
)
runs = data.serving.run_windows(ctx.url, ctx.project, start, end)
st.caption(
    f"{start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M} UTC, one point per {bucket_s} s, {len(runs)} eval runs."
)

shown = [(title, frame) for title, frame in panels.items() if not frame.empty]
if not shown:
    st.info("The samples in this window hold none of the vLLM or evallens metrics this page draws.")
for index in range(0, len(shown), 2):
    for column, (title, frame) in zip(st.columns(2), shown[index : index + 2], strict=False):
        with column:
            st.markdown(f"**{title}**")
            st.altair_chart(charts.series_with_runs(frame, runs, title, (start, end)), width="stretch")
missing = [title for title, frame in panels.items() if frame.empty]
if missing:
    st.caption("No samples in this window for: " + ", ".join(missing) + ".")
