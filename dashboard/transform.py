"""Pure reshaping of query results into what the pages show: deltas, rates, a waterfall, span facts,
where runs were scored differently."""

import shlex
from typing import Any

import pandas as pd

from evallens.reports import LOWER_IS_BETTER, METRICS, GateReportBody, InfraSummary, RunSummary
from evallens.runs import scoring_differences
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics

# (field of InfraSummary, label, kind): the kind says how a value reads (``FORMATS``).
INFRA_ROWS: tuple[tuple[str, str, str], ...] = (
    ("latency_ms_p50", "latency p50", "ms"),
    ("latency_ms_p95", "latency p95", "ms"),
    ("latency_ms_p99", "latency p99", "ms"),
    ("ttft_ms_p50", "TTFT p50", "ms"),
    ("ttft_ms_p95", "TTFT p95", "ms"),
    ("output_tokens_per_s", "output tokens/s", "rate"),
    ("kv_cache_usage_mean", "KV-cache usage mean", "share"),
    ("kv_cache_usage_max", "KV-cache usage max", "share"),
    ("prefix_cache_hit_rate", "prefix-cache hit rate", "share"),
    ("exact_cache_hit_rate", "exact-cache hit rate", "share"),
    ("semantic_cache_hit_rate", "semantic-cache hit rate", "share"),
    ("queue_time_ms_mean", "queue time mean", "ms"),
    ("num_requests_waiting_max", "waiting requests max", "count"),
    ("num_preemptions", "preemptions", "count"),
    ("num_degraded", "degraded requests", "count"),
    ("num_timeouts", "timed-out requests", "count"),
    ("num_errors", "failed requests", "count"),
)
# kind -> (value format, difference format): integers as integers, shares as %, times with units
FORMATS = {
    "ms": ("{:,.1f} ms", "{:+,.1f} ms"),
    "rate": ("{:,.1f}/s", "{:+,.1f}/s"),
    "share": ("{:.1%}", "{:+.1%}"),
    "count": ("{:,.0f}", "{:+,.0f}"),
}


def significance_mark(regression: bool | None, significant: bool | None) -> str:
    """How a quality delta is marked: a regression, a significant change, or not significant."""
    if regression is None:
        return "— (no gate report)"
    if regression:
        return "▼ regression"
    return "● significant" if significant else "not significant"


def quality_deltas(
    baseline: RunSummary, candidate: RunSummary, report: GateReportBody | None
) -> pd.DataFrame:
    """One row per scenario x metric: both means, the delta in points and its significance mark."""
    tests = {(c.scenario, c.metric): c for c in (report.comparisons if report else [])}
    rows = []
    groups = {"overall": (baseline.overall, candidate.overall)}
    for scenario in sorted(set(baseline.scenarios) | set(candidate.scenarios)):
        groups[scenario] = (baseline.scenarios.get(scenario, {}), candidate.scenarios.get(scenario, {}))
    for scenario, (base, cand) in groups.items():
        for metric in METRICS:
            if metric not in base or metric not in cand:
                continue
            test = tests.get((scenario, metric))
            rows.append(
                {
                    "scenario": scenario,
                    "metric": metric,
                    "baseline": base[metric].mean,
                    "candidate": cand[metric].mean,
                    "delta_pts": (cand[metric].mean - base[metric].mean) * 100,
                    "better": "lower" if metric in LOWER_IS_BETTER else "higher",
                    "p_adjusted": test.p_adjusted if test else None,
                    "significance": significance_mark(
                        test.regression if test else None, test.significant if test else None
                    ),
                }
            )
    return pd.DataFrame(rows)


def scoring_change(before: Any, after: Any) -> str | None:
    """What changed in how a run was scored since the run ``before`` it (None: scored alike): the keys
    that differ (``evallens.runs.scoring_differences``), or that one of the two did not record it."""
    before, after = _scoring(before), _scoring(after)
    differing = scoring_differences(before, after)
    if not differing:
        return None
    if before is None:
        return "recorded from this run on"
    return "not recorded by this run" if after is None else ", ".join(differing)


def mark_scoring_changes(trend: pd.DataFrame) -> pd.DataFrame:
    """The metric trend with ``scoring_change`` in place of ``scoring``: on each run scored differently
    from the run plotted before it (start order), what changed; None on the others."""
    runs = trend.drop_duplicates("run_id").sort_values("started_at", kind="stable")
    changes: dict[str, str | None] = {}
    previous: Any = None
    for index, run in enumerate(runs.itertuples()):
        changes[str(run.run_id)] = None if index == 0 else scoring_change(previous, run.scoring)
        previous = run.scoring
    return trend.drop(columns="scoring").assign(scoring_change=trend["run_id"].map(changes))


def replay_command(eval_set_name: str) -> str:
    """The command that replays a set's ``main`` baseline with today's metrics, ready to paste."""
    return f"evallens eval run --set {shlex.quote(eval_set_name)} --tag main"


def scoring_warning(baseline: tuple[str, Any], candidate: tuple[str, Any], replay: str) -> str | None:
    """Why two runs (label, stored scoring) cannot be compared, as the gate refuses them, in Markdown
    that names ``replay`` (the Markdown of ``replay_command``); None when they were scored alike."""
    (baseline_label, baseline_scoring), (candidate_label, candidate_scoring) = baseline, candidate
    baseline_scoring, candidate_scoring = _scoring(baseline_scoring), _scoring(candidate_scoring)
    differing = scoring_differences(baseline_scoring, candidate_scoring)
    if not differing:
        return None
    if baseline_scoring is None or candidate_scoring is None:
        older = baseline_label if baseline_scoring is None else candidate_label
        what = f"run {older} was stored before runs recorded how they were scored"
    else:
        what = f"they were scored differently ({', '.join(differing)} changed)"
    return (
        f"Runs {baseline_label} and {candidate_label} are not comparable: {what}, so their scores may "
        "differ by the metrics, not the target, and the gate refuses to compare them. Replay the baseline "
        f"with today's metrics ({replay}) and compare against it."
    )


def _scoring(stored: Any) -> dict[str, Any] | None:
    return stored if isinstance(stored, dict) else None  # NULL may come back as None or NaN


def infra_deltas(baseline: InfraSummary | None, candidate: InfraSummary | None) -> pd.DataFrame:
    """One row per serving measure of the two runs' windows, with the difference, each as it reads
    (``FORMATS``); a share's difference is in points."""
    rows = []
    for field, label, kind in INFRA_ROWS:
        base = getattr(baseline, field) if baseline else None
        cand = getattr(candidate, field) if candidate else None
        if base is None and cand is None:
            continue
        value, difference = FORMATS[kind]
        delta = None if base is None or cand is None else float(cand) - float(base)
        rows.append(
            {
                "measure": label,
                "baseline": "—" if base is None else value.format(float(base)),
                "candidate": "—" if cand is None else value.format(float(cand)),
                "delta": "—" if delta is None else _delta(difference, delta, kind),
            }
        )
    return pd.DataFrame(rows, columns=["measure", "baseline", "candidate", "delta"])


def _delta(difference: str, delta: float, kind: str) -> str:
    return f"{delta * 100:+.1f} pts" if kind == "share" else difference.format(delta)


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    return numerator / denominator.where(denominator > 0)


def serving_panels(gauges: pd.DataFrame, counters: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Time series per panel (columns time, series, value), keyed by the panel's axis title."""
    panels: dict[str, pd.DataFrame] = {}
    if not gauges.empty:
        kv = gauges[gauges["name"] == metrics.VLLM_KV_CACHE_USAGE]
        panels["KV-cache usage (%)"] = kv.assign(series="KV-cache usage", value=kv["value"] * 100)
        requests = gauges[
            gauges["name"].isin([metrics.VLLM_NUM_REQUESTS_RUNNING, metrics.VLLM_NUM_REQUESTS_WAITING])
        ]
        panels["requests (count)"] = requests.assign(series=requests["name"].str.replace("vllm:num_", ""))
    if not counters.empty:
        wide = counters.pivot_table(index="time", columns="name", values="increase", aggfunc="sum")
        wide = wide.reindex(columns=sorted(set(wide.columns) | _counter_names()), fill_value=float("nan"))
        hit = wide[metrics.VLLM_PREFIX_CACHE_HITS]
        queries = wide[metrics.VLLM_PREFIX_CACHE_QUERIES]
        panels["prefix-cache hit rate (%)"] = _long(_ratio(hit, queries) * 100, "prefix cache")
        ttft = metrics.VLLM_TIME_TO_FIRST_TOKEN
        panels["TTFT mean (ms)"] = _long(_ratio(wide[f"{ttft}_sum"], wide[f"{ttft}_count"]) * 1000, "TTFT")
        queue = metrics.VLLM_REQUEST_QUEUE_TIME
        panels["queue time mean (ms)"] = _long(
            _ratio(wide[f"{queue}_sum"], wide[f"{queue}_count"]) * 1000, "queue time"
        )
        panels["response-cache hit rate (%)"] = _cache_hit_rates(counters)
    return {title: frame.dropna(subset=["value"]) for title, frame in panels.items()}


def _counter_names() -> set[str]:
    ttft, queue = metrics.VLLM_TIME_TO_FIRST_TOKEN, metrics.VLLM_REQUEST_QUEUE_TIME
    return {
        metrics.VLLM_PREFIX_CACHE_HITS,
        metrics.VLLM_PREFIX_CACHE_QUERIES,
        f"{ttft}_sum",
        f"{ttft}_count",
        f"{queue}_sum",
        f"{queue}_count",
    }


def _long(values: pd.Series, series: str) -> pd.DataFrame:
    return pd.DataFrame({"time": values.index, "series": series, "value": values.to_numpy()})


def _cache_hit_rates(counters: pd.DataFrame) -> pd.DataFrame:
    lookups = counters[counters["name"] == f"{metrics.CACHE_LOOKUPS}_total"]
    if lookups.empty:
        return pd.DataFrame(columns=["time", "series", "value"])
    wide = lookups.pivot_table(index=["time", "cache"], columns="result", values="increase", aggfunc="sum")
    wide = wide.reindex(columns=["hit", "miss"], fill_value=0.0).fillna(0.0)
    rate = _ratio(wide["hit"], wide["hit"] + wide["miss"]) * 100
    frame = rate.rename("value").reset_index()
    return frame.assign(series=frame["cache"] + " cache")[["time", "series", "value"]]


def waterfall(spans: pd.DataFrame) -> pd.DataFrame:
    """Spans with their offset from the trace start, their depth and an indented label."""
    parents = dict(zip(spans["span_id"], spans["parent_span_id"], strict=True))

    def depth(span_id: str) -> int:
        level, seen = 0, {span_id}
        while (parent := parents.get(span_id)) in parents and parent not in seen:
            level, span_id = level + 1, str(parent)
            seen.add(span_id)
        return level

    start = spans["start_time"].min()
    frame = spans.assign(
        depth=[depth(span_id) for span_id in spans["span_id"]],
        offset_ms=(spans["start_time"] - start).dt.total_seconds() * 1000,
        status=spans["status_code"].map({2: "error"}).fillna("ok"),
    )
    frame["end_ms"] = frame["offset_ms"] + frame["duration_ms"]
    frame["label"] = [
        f"{' ' * 2 * level}{name} · {span_id[:6]}"
        for level, name, span_id in zip(frame["depth"], frame["name"], frame["span_id"], strict=True)
    ]
    return frame


def retrieved_documents(span_attributes: dict[str, Any]) -> list[str]:
    """Document ids a span retrieved or cited, from GenAI or OpenInference attributes."""
    found = span_attributes.get(attr.GEN_AI_RETRIEVAL_DOCUMENTS)
    if isinstance(found, str):
        found = [part.strip() for part in found.strip("[]").replace('"', "").split(",") if part.strip()]
    documents = [str(item.get("id", item)) if isinstance(item, dict) else str(item) for item in found or []]
    index = 0
    while (document := span_attributes.get(attr.retrieval_document_id(index))) is not None:
        documents.append(str(document))
        index += 1
    return documents


def span_facts(span: pd.Series) -> dict[str, Any]:
    """The attributes an engineer looks at first: tokens, cost, cache hits, degradation, documents."""
    attributes: dict[str, Any] = span["attributes"] or {}
    facts = {
        "model": span["model"],
        "duration (ms)": round(float(span["duration_ms"]), 1),
        "input tokens": span["input_tokens"],
        "output tokens": span["output_tokens"],
        "cost (USD)": span["cost_usd"],
        "exact-cache hit": attributes.get(attr.CACHE_EXACT_HIT),
        "semantic-cache hit": attributes.get(attr.CACHE_SEMANTIC_HIT),
        "degraded": attributes.get(attr.DEGRADED),
        "degraded reason": attributes.get(attr.DEGRADED_REASON),
        "retrieved documents": ", ".join(retrieved_documents(attributes)) or None,
        "status": _known(span["status_message"])
        or {0: "unset", 1: "ok", 2: "error"}.get(int(span["status_code"])),
    }
    return {name: _known(value) for name, value in facts.items()}


def _known(value: Any) -> Any:
    """None for SQL NULLs that pandas turned into NaN or NaT."""
    return None if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)) else value
