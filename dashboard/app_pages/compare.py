"""Compare runs, for engineers: quality deltas with significance beside what the serving stack did."""

import streamlit as st

from dashboard import _ui, charts, data, transform
from evallens.markdown import code, literal
from evallens.reports import GateReportBody, InfraSummary, RunSummary
from evallens.runs import left_out_notes

ctx = _ui.context()
st.title("Compare runs")
st.caption("A candidate run against its baseline: quality per scenario, serving metrics, flipped cases.")

all_runs = data.runs.runs(ctx.url, ctx.project)
if all_runs.empty:
    _ui.empty_state("runs")
    st.stop()

# with the run id: a selectbox tells its options apart by label (the last of equal labels wins), and
# runs of one label, set version and start minute happen (a CI matrix, a quick rerun)
labels = {
    row.run_id: f"{row.label} · {row.eval_set_name} v{row.set_version} · {row.started_at:%Y-%m-%d %H:%M}"
    + (f" · [{row.tags}]" if isinstance(row.tags, str) else "")
    + f" · {_ui.short_id(str(row.run_id), 8)}"
    for row in all_runs.itertuples()
}
run_ids = list(labels)
left, right = st.columns(2)
with left:
    candidate_id = str(st.selectbox("Candidate", run_ids, index=0, format_func=labels.__getitem__))
default_baseline = data.runs.baseline(ctx.url, ctx.project, candidate_id)
with right:
    baseline_id = str(
        st.selectbox(
            "Baseline",
            run_ids,
            index=run_ids.index(default_baseline)
            if default_baseline in run_ids
            else min(1, len(run_ids) - 1),
            format_func=labels.__getitem__,
        )
    )
if baseline_id == candidate_id:
    st.info("Pick two different runs. With a single run, run `evallens eval run` again after a change.")
    st.stop()

baseline_docs = data.runs.run_documents(ctx.url, ctx.project, baseline_id)
candidate_docs = data.runs.run_documents(ctx.url, ctx.project, candidate_id)
chosen = all_runs.set_index("run_id")
scored_differently = transform.scoring_warning(  # labels as written: CI may name runs after branches
    (literal(chosen.at[baseline_id, "label"]), baseline_docs["scoring"]),
    (literal(chosen.at[candidate_id, "label"]), candidate_docs["scoring"]),
    code(transform.replay_command(str(chosen.at[candidate_id, "eval_set_name"]))),
)
if scored_differently:
    st.warning(scored_differently, icon=":material/rule:")
report_json = data.runs.gate_report(ctx.url, ctx.project, baseline_id, candidate_id)
report = GateReportBody.model_validate(report_json) if report_json else None
if report:
    verdict = ":green[PASS]" if report.verdict == "pass" else ":red[REGRESSION]"
    st.markdown(
        f"Gate verdict: **{verdict}** (minimum effect {report.min_effect * 100:.0f} pts, "
        f"alpha {report.alpha}, {report.procedure} multiple-testing procedure)"
    )
    for label, note in left_out_notes(report):
        st.caption(f"{label.capitalize()}: {literal(note)}.")  # case keys from set files
else:
    st.caption(
        "No gate report for this pair, so no significance marks or hints: run "
        f"`evallens gate --baseline {baseline_id[:8]} --candidate {candidate_id[:8]}`."
    )

quality_col, infra_col = st.columns([3, 2])
with quality_col:
    st.subheader("Quality deltas")
    if baseline_docs["summary"] is None or candidate_docs["summary"] is None:
        st.info("One of the runs has no summary (it is still running or failed).")
    else:
        deltas = transform.quality_deltas(
            RunSummary.model_validate(baseline_docs["summary"]),
            RunSummary.model_validate(candidate_docs["summary"]),
            report,
        )
        st.altair_chart(charts.quality_heatmap(deltas), width="stretch")
        st.dataframe(
            deltas,
            hide_index=True,
            column_order=[
                "scenario",
                "metric",
                "baseline",
                "candidate",
                "delta_pts",
                "significance",
                "p_adjusted",
            ],
            column_config={
                "baseline": st.column_config.NumberColumn("baseline (%)", format="percent"),
                "candidate": st.column_config.NumberColumn("candidate (%)", format="percent"),
                "delta_pts": st.column_config.NumberColumn("delta (pts)", format="%+.1f"),
                "p_adjusted": st.column_config.NumberColumn("p (adjusted)", format="%.4f"),
            },
        )
with infra_col:
    st.subheader("Serving deltas")
    infra = transform.infra_deltas(
        InfraSummary.model_validate(baseline_docs["infra"]) if baseline_docs["infra"] else None,
        InfraSummary.model_validate(candidate_docs["infra"]) if candidate_docs["infra"] else None,
    )
    st.dataframe(infra, hide_index=True)
    st.subheader("Hints")
    if report is None or not report.hints:
        st.caption(
            "No hints: " + ("no gate report for this pair." if report is None else "nothing stood out.")
        )
    for hint in report.hints if report else []:
        evidence = ", ".join(
            f"{name} = {value:.3g}" for name, value in hint.evidence.items() if value is not None
        )
        based_on = f"\n\n*Based on {evidence}*" if evidence else ""  # a config change has no numbers
        # a config change's hint quotes the target's config as the target reported it: model ids, prompts
        st.info(f"{literal(hint.message)}{based_on}", icon=":material/lightbulb:")

st.subheader("Cases that flipped from pass to fail")
flipped = data.runs.flips(ctx.url, ctx.project, baseline_id, candidate_id)
if flipped.empty:
    st.success("No case passed in the baseline and failed in the candidate.")
    st.stop()
st.dataframe(flipped[["scenario", "case_key", "metric", "question"]], hide_index=True)


def show_answer(
    column: "st.delta_generator.DeltaGenerator",
    title: str,
    answer: object,
    documents: object,
    trace_id: object,
) -> None:
    """One side of a flipped case: the answer, its cited documents and a link to its trace."""
    column.markdown(f"**{title}**")
    column.text(answer if isinstance(answer, str) else "(no answer)")
    column.caption(
        "cited: "
        + (", ".join(map(literal, documents)) if isinstance(documents, list) and documents else "nothing")
    )
    if isinstance(trace_id, str) and trace_id:
        column.page_link(
            _ui.page_path("traces.py"),
            label=f"trace {trace_id[:12]}",
            icon=":material/account_tree:",
            query_params={"trace_id": trace_id},
        )


for case in flipped.head(ctx.max_rows).itertuples():
    title = " · ".join(map(literal, (case.scenario, case.case_key, f"fails {case.metric}")))
    with st.expander(title):  # questions of promoted cases are what production users typed
        st.markdown(f"**Question:** {literal(case.question)}")
        reference = case.reference_answer if isinstance(case.reference_answer, str) else "—"
        st.markdown(f"**Reference:** {literal(reference)}")
        base_col, cand_col = st.columns(2)
        show_answer(
            base_col, "Baseline", case.baseline_response, case.baseline_retrieved_ids, case.baseline_trace_id
        )
        show_answer(
            cand_col,
            "Candidate",
            case.candidate_response,
            case.candidate_retrieved_ids,
            case.candidate_trace_id,
        )
