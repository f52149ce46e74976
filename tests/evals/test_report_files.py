"""Report files are each written whole: a write cut short leaves the file as it was, never its first part."""

import os
import resource
import subprocess
import sys
from pathlib import Path

from evallens.settings import child_environment

# writes the reports named in argv[2:] (name=size in bytes) into argv[1], printing a failure as one line
WRITE = """
import sys
from pathlib import Path
from evals.errors import ReportNotWritten
from evals.render import write_report_files
contents = {name: "x" * int(size) for name, size in (arg.split("=") for arg in sys.argv[2:])}
try:
    write_report_files(Path(sys.argv[1]), contents)
except ReportNotWritten as error:
    print(error, file=sys.stderr)
    sys.exit(2)
"""
FILE_SIZE_LIMIT = 200


def test_a_report_cut_short_leaves_the_old_file_whole(tmp_path: Path) -> None:
    """A file-size limit (as a full disk) stops the second file's write: it was truncated and left holding
    the first part of the new report, beside the old version of the others."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "gate.md").write_text("old markdown\n")
    (reports / "gate.xml").write_text("old junit\n")
    written = subprocess.run(
        [sys.executable, "-c", WRITE, str(reports), "gate.md=100", f"gate.xml={FILE_SIZE_LIMIT * 10}"],
        env=child_environment({}), capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT)),
    )  # fmt: skip
    assert written.returncode == 2, written.stderr
    assert written.stderr.strip().splitlines() == [
        f"cannot write reports into {reports / 'gate.xml'}: File too large"
    ]
    assert (reports / "gate.xml").read_text() == "old junit\n"
    assert (reports / "gate.md").read_text() == "x" * 100
    assert sorted(path.name for path in reports.iterdir()) == ["gate.md", "gate.xml"]  # no temporary left


def test_report_files_are_created_as_open_would_create_them(tmp_path: Path) -> None:
    """Written through a temporary file (mkstemp makes it 0600): a report stays readable by its group and
    others, as one written in place was."""
    reports = tmp_path / "reports"
    written = subprocess.run(
        [sys.executable, "-c", WRITE, str(reports), "gate.md=10", "gate.json=10"],
        env=child_environment({}), capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert {path.name: path.stat().st_mode & 0o777 for path in reports.iterdir()} == {
        "gate.md": 0o644,
        "gate.json": 0o644,
    }
