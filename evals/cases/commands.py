"""What the ``evallens cases`` commands and ``eval sets export`` do, each returning a typed report."""

from collections.abc import Sequence
from pathlib import Path

from evallens import cases
from evallens.db.sessions import open_sessions
from evallens.settings import CasesSettings
from evals.cases.export import ExportFormat, ExportReport, export_set
from evals.cases.mine import MiningReport, mine_cases, parse_since


def mine_command(since: str, limit: int) -> MiningReport:
    """Mine candidate bad cases from production traffic."""
    window = parse_since(since)
    with open_sessions() as sessions, sessions() as session:
        return mine_cases(session, CasesSettings(), since=window, limit=limit)


def promote_command(
    trace_ids: Sequence[str], set_name: str, scenario: str, expected: cases.Expected, reference: str | None
) -> cases.PromotionReport:
    """Promote traces into a new version of ``set_name``; nothing is stored on error."""
    project = CasesSettings().cases_project
    with open_sessions() as sessions, sessions.begin() as session:
        return cases.promote_traces(
            session, trace_ids, eval_set_name=set_name, scenario=scenario, expected=expected,
            reference_answer=reference, project=project,
        )  # fmt: skip


def review_command(case_keys: Sequence[str], set_name: str, review: cases.CaseReview) -> cases.ReviewReport:
    """Complete (or reject) needs-review cases in a new version of ``set_name``."""
    project = CasesSettings().cases_project
    with open_sessions() as sessions, sessions.begin() as session:
        return cases.review_cases(session, case_keys, review, eval_set_name=set_name, project=project)


def list_command(set_name: str, status: str | None) -> list[dict[str, object]]:
    """Cases of the latest version of ``set_name`` (optionally of one status) as plain rows."""
    project = CasesSettings().cases_project
    with open_sessions() as sessions, sessions() as session:
        eval_set = cases.latest_eval_set(session, set_name, project)
        return [
            {
                "version": eval_set.version, "case_key": case.case_key, "status": case.status,
                "scenario": case.scenario, "expected": case.expected_behavior,
                "source_trace_id": case.source_trace_id, "question": case.question,
                "redactions": [r["kind"] for r in case.redactions or []],
            }
            for case in cases.set_cases(session, eval_set.id)
            if status is None or case.status == status
        ]  # fmt: skip


def export_command(selector: str, fmt: ExportFormat, out: Path) -> ExportReport:
    """Write a stored set version to a set file."""
    project = CasesSettings().cases_project
    with open_sessions() as sessions, sessions() as session:
        return export_set(session, selector, fmt, out, project)
