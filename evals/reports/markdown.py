"""The comparison as Markdown, for a pull-request comment."""

from evallens.reports import GateReportBody
from evals.reports._figures import infra_rows, number, points, verdict_word

MAX_FLIPS_SHOWN = 10


def render_markdown(body: GateReportBody) -> str:
    """A heading with the verdict, the quality table, the infra table, hints and flipped cases."""
    icon = ":x:" if body.verdict == "regression" else ":white_check_mark:"
    lines = [
        f"## {icon} evallens gate: {body.verdict}",
        "",
        f"Set `{body.eval_set_name}`, baseline `{body.baseline_run_id}`, "
        f"candidate `{body.candidate_run_id}`; regression = Holm-adjusted p < {body.alpha} "
        f"and worse by at least {body.min_effect * 100:.0f} points.",
        "",
        "| scenario | metric | baseline | candidate | delta (pts) | n | test | p (Holm) | verdict |",
        "|---|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for c in body.comparisons:
        word = f"**{verdict_word(c)}**" if c.regression else verdict_word(c)
        lines.append(
            f"| {c.scenario} | {c.metric} | {c.baseline:.3f} | {c.candidate:.3f} | {points(c.delta)} | "
            f"{c.num_pairs} | {c.test} | {c.p_adjusted:.4f} | {word} |"
        )
    rows = infra_rows(body.infra_baseline, body.infra_candidate)
    if rows:
        lines += [
            "",
            "### Serving metrics",
            "",
            "| figure | baseline | candidate | delta |",
            "|---|---:|---:|---:|",
        ]
        lines += [f"| {label} | {b} | {c} | {d} |" for label, b, c, d in rows]
    if body.hints:
        lines += ["", "### Likely causes", ""]
        for hint in body.hints:
            numbers = ", ".join(f"`{k}={number(v)}`" for k, v in hint.evidence.items())
            lines.append(f"- {hint.message}" + (f" ({numbers})" if numbers else ""))
    if body.flipped_cases:
        lines += ["", f"### Cases that got worse (first {MAX_FLIPS_SHOWN} of {len(body.flipped_cases)})", ""]
        for flip in body.flipped_cases[:MAX_FLIPS_SHOWN]:
            answer = (flip.candidate_response or "").replace("\n", " ")[:160]
            lines.append(
                f"- `{flip.case_key}` ({flip.scenario}, {flip.metric}): {flip.question} -> _{answer}_"
            )
    return "\n".join(lines) + "\n"
