"""Render a gate or compare report (stored shape: evallens.reports): terminal, Markdown, JUnit XML, JSON."""

from pathlib import Path

from evallens.reports import GateReportBody
from evals.render.junit import render_junit
from evals.render.markdown import render_markdown
from evals.render.terminal import print_report

REPORT_FILES = {"markdown": "gate.md", "junit": "gate.xml", "json": "gate.json"}


def write_reports(body: GateReportBody, report_dir: Path) -> list[Path]:
    """Write ``gate.md``, ``gate.xml`` and ``gate.json`` into ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    contents = {
        "markdown": render_markdown(body),
        "junit": render_junit(body),
        "json": body.model_dump_json(indent=2) + "\n",
    }
    paths = []
    for kind, name in REPORT_FILES.items():
        path = report_dir / name
        path.write_text(contents[kind], encoding="utf-8")
        paths.append(path)
    return paths


__all__ = ["print_report", "render_junit", "render_markdown", "write_reports"]
