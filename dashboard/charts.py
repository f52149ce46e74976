"""Altair charts: interactive (zoom, pan, tooltips), with axis titles that carry units."""

from typing import Any

import altair as alt
import pandas as pd

HEIGHT = 260


def metric_trend(trend: pd.DataFrame) -> Any:
    """Each metric's overall mean per run, runs in start order named by label, tags and start time,
    with the 95% interval as a band, and a dashed rule at each run whose ``scoring_change`` says it was
    scored differently from the run before it."""
    tags = trend["tags"] if "tags" in trend else pd.Series([None] * len(trend), index=trend.index)
    names = [
        f"{label} [{tag}]" if isinstance(tag, str) else str(label)
        for label, tag in zip(trend["label"], tags, strict=True)
    ]
    trend = trend.assign(
        run=[
            f"{name} {started:%m-%d %H:%M}" for name, started in zip(names, trend["started_at"], strict=True)
        ]
    )
    order = list(dict.fromkeys(trend.sort_values("started_at", kind="stable")["run"]))
    x = alt.X("run:O", title="run (label [tags] start, UTC)", sort=order, axis=alt.Axis(labelAngle=-30))
    base = alt.Chart(trend).encode(x=x, color=alt.Color("metric:N", title="metric"))
    band = base.mark_area(opacity=0.15).encode(
        y=alt.Y("ci_low:Q", title="rate (%)", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        y2="ci_high:Q",
    )
    line = base.mark_line(point=True).encode(
        y="mean:Q",
        tooltip=[
            alt.Tooltip("run:N", title="run"),
            alt.Tooltip("metric:N"),
            alt.Tooltip("mean:Q", format=".1%"),
            alt.Tooltip("ci_low:Q", format=".1%", title="95% CI low"),
            alt.Tooltip("ci_high:Q", format=".1%", title="95% CI high"),
            alt.Tooltip("started_at:T", format="%Y-%m-%d %H:%M", title="start (UTC)"),
        ],
    )
    changed = trend.dropna(subset=["scoring_change"]) if "scoring_change" in trend else trend.iloc[:0]
    if changed.empty:
        return (band + line).properties(height=HEIGHT)
    markers = changed.drop_duplicates("run")
    markers = markers.assign(marker="scoring changed: " + markers["scoring_change"])[["run", "marker"]]
    at_run = alt.Chart(markers).encode(x=x)
    rules = at_run.mark_rule(color="#7f7f7f", strokeDash=[4, 4]).encode(
        tooltip=[alt.Tooltip("marker:N", title="scoring")]
    )
    labels = at_run.mark_text(align="left", baseline="top", dx=3, dy=3, color="#7f7f7f").encode(
        y=alt.value(0), text="marker:N"
    )
    return alt.layer(band, line, rules, labels).properties(height=HEIGHT)


def stacked_per_day(frame: pd.DataFrame, value: str, title: str, fmt: str) -> Any:
    """A stacked bar per UTC day, one colour per key."""
    frame = frame.assign(day=frame["day"].dt.strftime("%Y-%m-%d"))
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("day:O", title="day (UTC)", axis=alt.Axis(labelAngle=0)),
            y=alt.Y(f"sum({value}):Q", title=title),
            color=alt.Color("key:N", title=None),
            tooltip=[
                alt.Tooltip("day:O", title="day"),
                alt.Tooltip("key:N"),
                alt.Tooltip(f"sum({value}):Q", format=fmt, title=title),
            ],
        )
        .properties(height=HEIGHT)
        .interactive(bind_y=False)
    )


def traffic(frame: pd.DataFrame) -> Any:
    """Requests per day as bars and the error rate as a line on its own axis."""
    rated = frame.assign(
        day=frame["day"].dt.strftime("%Y-%m-%d"),
        error_rate=frame["num_errors"] / frame["num_requests"].where(frame["num_requests"] > 0),
    )
    base = alt.Chart(rated).encode(x=alt.X("day:O", title="day (UTC)", axis=alt.Axis(labelAngle=0)))
    bars = base.mark_bar(opacity=0.6).encode(
        y=alt.Y("num_requests:Q", title="requests per day"),
        tooltip=[
            "day:O",
            "num_requests:Q",
            "num_errors:Q",
            alt.Tooltip("error_rate:Q", format=".2%"),
        ],
    )
    line = base.mark_line(point=True, color="#d62728").encode(
        y=alt.Y("error_rate:Q", title="error rate (%)", axis=alt.Axis(format="%")),
    )
    return alt.layer(bars, line).resolve_scale(y="independent").properties(height=HEIGHT)


def quality_heatmap(deltas: pd.DataFrame) -> Any:
    """Delta per scenario x metric in points; red where it got worse, whichever way the metric points."""
    frame = deltas.assign(
        change=[
            -delta if better == "lower" else delta
            for delta, better in zip(deltas["delta_pts"], deltas["better"], strict=True)
        ],
        text=[f"{delta:+.1f}" for delta in deltas["delta_pts"]],
    )
    base = alt.Chart(frame).encode(
        x=alt.X("metric:N", title=None, axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("scenario:N", title=None, sort=list(frame["scenario"].unique())),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "change:Q",
            title="better (+) / worse (-), pts",
            scale=alt.Scale(scheme="redyellowgreen", domainMid=0),
        ),
        tooltip=[
            "scenario:N",
            "metric:N",
            alt.Tooltip("delta_pts:Q", format="+.1f", title="delta (pts)"),
            "significance:N",
        ],
    )
    labels = base.mark_text().encode(text="text:N")
    return (cells + labels).properties(height=alt.Step(30), width=alt.Step(110))


def waterfall(frame: pd.DataFrame) -> Any:
    """A trace's spans as bars from their start to their end, in ms since the trace started."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("offset_ms:Q", title="time since trace start (ms)"),
            x2="end_ms:Q",
            y=alt.Y("label:N", title=None, sort=list(frame["label"]), axis=alt.Axis(labelLimit=360)),
            color=alt.Color(
                "status:N", scale=alt.Scale(domain=["ok", "error"], range=["#4c78a8", "#d62728"]), title=None
            ),
            tooltip=["name:N", alt.Tooltip("duration_ms:Q", format=".1f", title="duration (ms)"), "status:N"],
        )
        .properties(height=alt.Step(24))
        .interactive(bind_y=False)
    )


def series_with_runs(
    series: pd.DataFrame, runs: pd.DataFrame, title: str, domain: tuple[pd.Timestamp, pd.Timestamp]
) -> Any:
    """A metric over time with each eval run drawn as a shaded band over its start-to-finish window."""
    x_scale = alt.Scale(domain=[domain[0].isoformat(), domain[1].isoformat()])
    line = (
        alt.Chart(series)
        .mark_line(point=alt.OverlayMarkDef(size=12))
        .encode(
            x=alt.X("time:T", title="time (UTC)", scale=x_scale, axis=alt.Axis(format="%m-%d %H:%M")),
            y=alt.Y("value:Q", title=title),
            color=alt.Color("series:N", title=None),
            tooltip=[
                alt.Tooltip("time:T", format="%Y-%m-%d %H:%M:%S"),
                "series:N",
                alt.Tooltip("value:Q", format=".2f"),
            ],
        )
    )
    if runs.empty:
        return line.properties(height=HEIGHT).interactive(bind_y=False)
    bands = (
        alt.Chart(runs)
        .mark_rect(opacity=0.2, color="#ff7f0e")
        .encode(
            x=alt.X("started_at:T", scale=x_scale),
            x2="finished_at:T",
            tooltip=[alt.Tooltip("run:N", title="eval run"), "eval_set_name:N", "status:N"],
        )
    )
    labels = (
        alt.Chart(runs)
        .mark_text(align="left", baseline="top", dx=3, dy=3, color="#b35806")
        .encode(x=alt.X("started_at:T", scale=x_scale), y=alt.value(0), text="run:N")
    )
    return alt.layer(bands, labels, line).properties(height=HEIGHT).interactive(bind_y=False)
