"""The comparison as Markdown, for a pull-request comment."""

from evallens.markdown import cell, code, literal, one_line
from evallens.reports import GateReportBody
from evallens.runs import left_out_notes
from evals.render._figures import (
    cache_line,
    cache_warning,
    detectable,
    infra_rows,
    number,
    points,
    power_note,
    power_summary,
    underpowered,
    verdict_word,
)

MAX_FLIPS_SHOWN = 10


def render_markdown(body: GateReportBody) -> str:
    """A heading with the verdict, the quality table, caches, power, infra, hints and flipped cases."""
    icon = ":x:" if body.verdict == "regression" else ":white_check_mark:"
    lines = [
        f"## {icon} evallens gate: {body.verdict}",
        "",
        f"Set `{body.eval_set_name}`, baseline `{body.baseline_run_id}`, "
        f"candidate `{body.candidate_run_id}`; regression = significantly worse (adjusted p < {body.alpha}) "
        f"and worse by at least {body.min_effect * 100:.0f} points.",
    ]
    if body.error_rate:
        lines += ["", f"Procedure `{body.procedure}`: {body.error_rate}."]
    lines += [
        "",
        "| scenario | metric | baseline | candidate | delta (pts) | n | worse/better | test | p | p adj "
        "| detects >= (pts) | verdict |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for c in body.comparisons:
        word = f"**{verdict_word(c)}**" if c.regression else verdict_word(c)
        lines.append(
            f"| {cell(c.scenario)} | {c.metric} | {c.baseline:.3f} | {c.candidate:.3f} | {points(c.delta)} | "
            f"{c.num_pairs} | {c.num_worse}/{c.num_better} | {c.test} | {c.p_value:.4f} | "
            f"{c.p_adjusted:.4f} | {detectable(c)} | {word} |"
        )
    lines += _caches_and_power(body)
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
            # a config change's hint quotes the target's config keys and values as it reported them
            lines.append(f"- {literal(hint.message)}" + (f" ({numbers})" if numbers else ""))
    if body.flipped_cases:
        lines += ["", f"### Cases that got worse (first {MAX_FLIPS_SHOWN} of {len(body.flipped_cases)})", ""]
        for flip in body.flipped_cases[:MAX_FLIPS_SHOWN]:
            answer = literal(one_line(flip.candidate_response or "")[:160])
            lines.append(
                f"- {code(flip.case_key)} ({cell(flip.scenario)}, {flip.metric}): "
                f"{literal(flip.question or '')} -> _{answer}_"
            )
    return "\n".join(lines) + "\n"


def _caches_and_power(body: GateReportBody) -> list[str]:
    lines: list[str] = []
    cached = [
        line
        for label, counts in (("baseline", body.cache_baseline), ("candidate", body.cache_candidate))
        if (line := cache_line(label, counts)) is not None
    ]
    if cached:
        lines += ["", "### Cached answers", ""] + [f"- {line}" for line in cached]
        warning = cache_warning(body)
        if warning is not None:
            lines.append(f"- **{warning}**")
    for label, note in left_out_notes(body):  # names case keys
        lines += ["", f"**{label.capitalize()}:** {one_line(note)}."]
    if body.repeats_baseline > 1 or body.repeats_candidate > 1:
        lines += [
            "",
            f"Repeats: {body.repeats_baseline} (baseline), {body.repeats_candidate} (candidate), averaged "
            "per case: the tests count cases, not repeats.",
        ]
    summary = power_summary(body)
    if summary is not None:
        lines += ["", "### Power", "", f"{summary} (marked `!` above; `none`: no possible drop):", ""]
        lines += [f"- {one_line(power_note(weak, body.min_effect))}" for weak in underpowered(body)]
    return lines
