"""``--on-regression``: POST the verdict to a webhook, or run a command with it in the environment."""

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from evallens.credentials import mask_credentials
from evallens.reports import GateReportBody
from evallens.settings import child_environment
from evals.errors import EvalConfigError

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
        except httpx.HTTPError as error:  # its text may quote the URL
            return f"webhook {webhook_origin(target)} failed: {type(error).__name__}"
        return f"webhook {webhook_origin(target)} answered {response.status_code}"
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
        return f"on-regression command timed out after {HOOK_TIMEOUT_S:.0f} s: {program_of(target)}"
    return f"on-regression command exited {done.returncode}: {program_of(target)}"


def check_webhook(url: str) -> None:
    """``EvalConfigError`` naming the webhook by its origin alone when httpx cannot send to ``url``."""
    try:
        httpx.URL(url)
    except httpx.InvalidURL as error:
        raise EvalConfigError(
            f"--on-regression {webhook_origin(url)!r} is not a valid URL: {error}"
        ) from None


def webhook_origin(url: str) -> str:
    """``scheme://host[:port]`` of a webhook: a Slack or Teams webhook's secret is in its path or query,
    a proxy's in its user info, so none of them is shown."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket: no host to show
        return "(invalid URL)"
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=", re.ASCII)


def program_of(command: str) -> str:
    """The program a hook's command line runs, without its arguments and the variables it sets: either
    may hold a token (``--token abc``, ``-u bot:pass``, ``SLACK_TOKEN=abc``) that no pattern reliably
    finds."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unclosed quote: the shell refuses it too
        words = command.split()
    program = next((word for word in words if not _ASSIGNMENT.match(word)), "")
    return mask_credentials(program) or "(no program)"
