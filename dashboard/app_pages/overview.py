"""Overview for product managers: did quality hold, and what does it cost?"""

import streamlit as st

from dashboard import _ui, charts, data, transform
from evallens.markdown import code, literal
from evallens.reports import LOWER_IS_BETTER, METRICS, MetricEstimate, RunSummary

ctx = _ui.context()
present = data.status.data_present(ctx.url, ctx.project)
st.title("Overview")
st.caption("Latest gate verdicts, quality per scenario against the baseline, cost and traffic.")

if not (present["runs"] or present["spans"]):
    _ui.empty_state("runs")
    _ui.empty_state("spans")
    st.stop()


def scorecard(scenario: str, current: dict[str, MetricEstimate], before: dict[str, MetricEstimate]) -> None:
    """One row of metric tiles: the rate, its interval and the change since the baseline."""
    applicable = [metric for metric in METRICS if metric in current]  # no tile for what does not apply
    if not applicable:
        return
    st.markdown(f"**{literal(scenario.replace('_', ' '))}**")
    for column, metric in zip(st.columns(len(METRICS)), applicable, strict=False):
        estimate = current[metric]
        previous = before.get(metric)
        change = estimate.mean - previous.mean if previous else None
        unchanged = change is not None and abs(change) < 0.0005
        column.metric(
            metric,
            _ui.pct(estimate.mean),
            delta=None if change is None else ("±0.0 pts" if unchanged else _ui.points(change)),
            delta_color="off" if unchanged else "inverse" if metric in LOWER_IS_BETTER else "normal",
            help=f"95% CI {_ui.pct(estimate.ci_low)} – {_ui.pct(estimate.ci_high)}, n = {estimate.n}",
        )


st.header("Gate verdicts")
gates = data.runs.latest_gates(ctx.url, ctx.project)
if gates.empty:
    _ui.empty_state("gates")
for column, gate in zip(st.columns(max(1, min(4, len(gates)))), gates.itertuples(), strict=False):
    verdict = ":green-badge[PASS]" if gate.verdict == "pass" else ":red-badge[REGRESSION]"
    column.markdown(f"**{literal(gate.eval_set_name)}** {verdict}")  # names from set files and CI
    column.caption(
        f"{literal(gate.candidate)} vs {literal(gate.baseline)} · "
        f"{gate.num_regressions} regressed cells · {gate.created_at:%Y-%m-%d %H:%M} UTC"
    )

st.header("Quality per scenario")
all_runs = data.runs.runs(ctx.url, ctx.project)
completed = all_runs[all_runs["status"] == "completed"] if not all_runs.empty else all_runs
if completed.empty:
    _ui.empty_state("runs")
else:
    set_names = sorted(completed["eval_set_name"].unique())
    set_name = st.selectbox("Eval set", set_names) if len(set_names) > 1 else set_names[0]
    latest = completed[completed["eval_set_name"] == set_name].iloc[0]
    summary_json = data.runs.run_documents(ctx.url, ctx.project, latest["run_id"])["summary"]
    baseline_id = data.runs.baseline(ctx.url, ctx.project, latest["run_id"])
    baseline_json = (
        data.runs.run_documents(ctx.url, ctx.project, baseline_id)["summary"] if baseline_id else None
    )
    if summary_json is None:
        st.info(f"Run {literal(latest['label'])} has no summary yet.")
    else:
        summary = RunSummary.model_validate(summary_json)
        baseline = RunSummary.model_validate(baseline_json) if baseline_json else None
        base_label = all_runs.set_index("run_id")["label"].get(baseline_id, "none") if baseline_id else "none"
        st.caption(
            f"Run **{literal(latest['label'])}** ({latest['started_at']:%Y-%m-%d %H:%M} UTC, "
            f"{summary.num_cases} cases, "
            f"{summary.num_errors} failed requests) against baseline **{literal(base_label)}**. "
            "Hover a tile for its 95% confidence interval."
        )
        scorecard("overall", summary.overall, baseline.overall if baseline else {})
        for scenario, estimates in sorted(summary.scenarios.items()):
            scorecard(scenario, estimates, baseline.scenarios.get(scenario, {}) if baseline else {})
    trend = transform.mark_scoring_changes(data.runs.metric_trend(ctx.url, ctx.project, set_name))
    if not trend.empty:
        st.subheader("Trend over runs")
        st.altair_chart(charts.metric_trend(trend), width="stretch")
        if trend["scoring_change"].notna().any():
            st.caption(
                "A dashed rule marks a run scored differently from the run before it (other metrics code, "
                "settings, judge or harm classifier): scores on either side of a rule are not comparable, "
                "since they may have moved by the metrics, not the target. To compare, replay the baseline "
                f"with today's metrics: {code(transform.replay_command(set_name))}."
            )

st.header("Cost and traffic")
if not present["spans"]:
    _ui.empty_state("spans")
    st.stop()
left, middle, right = st.columns(3)
with left:
    hours = int(_ui.window_hours("Window", data.status.traffic_extent(ctx.url, ctx.project)))
with middle:
    dimension = st.radio("Cost by", list(data.traffic.COST_DIMENSIONS), horizontal=True)
with right:
    include_eval = st.checkbox("Include eval-run traffic", value=True)
cost = data.traffic.cost_per_day(ctx.url, ctx.project, hours, str(dimension), include_eval)
traffic = data.traffic.traffic_per_day(ctx.url, ctx.project, hours, include_eval)
total_cost = float(cost["cost_usd"].sum()) if not cost.empty else 0.0
num_requests = int(traffic["num_requests"].sum()) if not traffic.empty else 0
num_errors = int(traffic["num_errors"].sum()) if not traffic.empty else 0
tiles = st.columns(3)
tiles[0].metric("cost (USD)", f"${total_cost:,.4f}")
tiles[1].metric("requests", _ui.count(num_requests))
tiles[2].metric("error rate", _ui.pct(num_errors / num_requests if num_requests else None, 2))
chart_left, chart_right = st.columns(2)
with chart_left:
    st.markdown(f"**Cost per day by {dimension}**")
    if cost.empty:
        st.info("No span in this window carries a cost; `evallens prices` sets model prices.")
    else:
        st.altair_chart(charts.stacked_per_day(cost, "cost_usd", "cost (USD)", "$.4f"), width="stretch")
with chart_right:
    st.markdown("**Requests and error rate per day**")
    if traffic.empty:
        st.info("No requests in this window.")
    else:
        st.altair_chart(charts.traffic(traffic), width="stretch")
