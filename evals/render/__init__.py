"""Render a gate or compare report (stored shape: evallens.reports): terminal, Markdown, JUnit XML, JSON."""

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from evallens.reports import GateReportBody
from evals._files import write_text_whole
from evals.errors import ReportNotWritten
from evals.render.junit import render_junit
from evals.render.markdown import render_markdown
from evals.render.terminal import print_report

REPORT_FILES = {"markdown": "gate.md", "junit": "gate.xml", "json": "gate.json"}


def check_report_dir(report_dir: Path) -> Path:
    """Check, creating nothing, that reports can be written into ``report_dir``, so that a folder that
    cannot hold them stops a command before its work (a replay, a calibration). ``write_report_files``
    makes it: a command stopped by bad input or a failure leaves no empty folder behind."""
    nearest = report_dir
    for nearest in (report_dir, *report_dir.parents):  # "." or "/" at the latest
        if os.path.lexists(nearest):
            break
    if not nearest.is_dir():  # worded as mkdir(parents=True) words it
        code = errno.EEXIST if nearest == report_dir else errno.ENOTDIR
        raise ReportNotWritten(f"cannot write reports into {report_dir}: {os.strerror(code)}")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise ReportNotWritten(f"cannot write reports into {report_dir}: permission denied")
    return report_dir


def write_report_files(report_dir: Path, contents: dict[str, str]) -> list[Path]:
    """Write each ``{file name: text}`` into ``report_dir`` (made, with its parents, if missing), each
    file whole (a reader never sees the first part of one); any failure is one ``ReportNotWritten``."""
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _not_written(report_dir, error) from None
    paths = []
    for name, text in contents.items():
        path = report_dir / name
        try:
            write_text_whole(path, text)
        except OSError as error:
            raise _not_written(path, error) from None
        paths.append(path)
    return paths


def _not_written(path: Path, error: OSError) -> ReportNotWritten:
    return ReportNotWritten(f"cannot write reports into {path}: {error.strerror or error}")


def write_reports(body: GateReportBody, report_dir: Path) -> list[Path]:
    """Write ``gate.md``, ``gate.xml`` and ``gate.json`` into ``report_dir``."""
    contents = {
        "markdown": render_markdown(body),
        "junit": render_junit(body),
        "json": body.model_dump_json(indent=2) + "\n",
    }
    return write_report_files(report_dir, {name: contents[kind] for kind, name in REPORT_FILES.items()})


@contextlib.contextmanager
def reports_taken_back_on_error(report_dir: Path | None) -> Iterator[None]:
    """Run the block that writes the reports into ``report_dir`` and stores their verdict; when it raises
    (a report not written, a commit refused), remove the report files it wrote and the folders it made:
    no file is left claiming a verdict that was never stored. Files it did not replace stay."""
    if report_dir is None:
        yield
        return
    made = [folder for folder in (report_dir, *report_dir.parents) if not os.path.lexists(folder)]
    paths = [report_dir / name for name in REPORT_FILES.values()]
    before = {path: _identity(path) for path in paths}
    try:
        yield
    except BaseException:
        for path in paths:
            # a report is written whole through a new file (write_text_whole): a new identity is ours
            if _identity(path) not in (None, before[path]):
                with contextlib.suppress(OSError):
                    path.unlink()
        for folder in made:  # innermost first; one holding anything else stays
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        status = path.lstat()
    except OSError:
        return None
    return status.st_dev, status.st_ino


__all__ = [
    "check_report_dir",
    "print_report",
    "render_junit",
    "render_markdown",
    "reports_taken_back_on_error",
    "write_report_files",
    "write_reports",
]
