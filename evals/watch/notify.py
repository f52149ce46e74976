"""``--on-regression``: POST the verdict to a webhook, or run a command with it in the environment."""

import subprocess
from pathlib import Path
from typing import Any

import httpx

from evallens.reports import GateReportBody
from evallens.settings import child_environment

HOOK_TIMEOUT_S = 300.0
WEBHOOK_TIMEOUT_S = 10.0


def regression_payload(body: GateReportBody, report_dir: Path | None) -> dict[str, Any]:
    """What a webhook receives: the verdict, the runs, the regressed cells and the hints."""
    return {
        "verdict": body.verdict,
        "eval_set": body.eval_set_name,
        "baseline_run_id": body.baseline_run_id,
        "candidate_run_id": body.candidate_run_id,
        "regressions": [
            {"scenario": c.scenario, "metric": c.metric, "delta": c.delta, "p_adjusted": c.p_adjusted}
            for c in body.comparisons
            if c.regression
        ],
        "hints": [hint.message for hint in body.hints],
        "report_dir": str(report_dir) if report_dir is not None else None,
    }


def is_webhook(target: str) -> bool:
    """An http(s) URL is POSTed to; anything else is a shell command."""
    return target.startswith(("http://", "https://"))


def notify_regression(target: str, body: GateReportBody, report_dir: Path | None) -> str:
    """Call the hook; returns one line saying what happened (a failing hook never stops the watch)."""
    payload = regression_payload(body, report_dir)
    if is_webhook(target):
        try:
            response = httpx.post(target, json=payload, timeout=WEBHOOK_TIMEOUT_S)
        except httpx.HTTPError as error:
            return f"webhook {target} failed: {type(error).__name__}: {error}"
        return f"webhook {target} answered {response.status_code}"
    regressions = ",".join(f"{r['scenario']}/{r['metric']}" for r in payload["regressions"])
    environment = child_environment(
        {
            "EVALLENS_GATE_VERDICT": body.verdict,
            "EVALLENS_GATE_EVAL_SET": body.eval_set_name,
            "EVALLENS_GATE_BASELINE_RUN_ID": body.baseline_run_id,
            "EVALLENS_GATE_CANDIDATE_RUN_ID": body.candidate_run_id,
            "EVALLENS_GATE_REGRESSIONS": regressions,
            "EVALLENS_GATE_REPORT_DIR": payload["report_dir"] or "",
        }
    )
    try:
        # the user's own command line, as a CI step would run it
        done = subprocess.run(target, shell=True, env=environment, timeout=HOOK_TIMEOUT_S, check=False)  # noqa: S602
    except subprocess.TimeoutExpired:
        return f"on-regression command timed out after {HOOK_TIMEOUT_S:.0f} s: {target}"
    return f"on-regression command exited {done.returncode}: {target}"
