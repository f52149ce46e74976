"""``evallens eval watch`` as a real subprocess whose output lines a test reads as they come."""

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from evallens.settings import child_environment


class Watcher:
    """``evallens eval watch`` in a subprocess, its output lines gathered as they come."""

    def __init__(self, database_url: str, service_url: str, set_name: str, report_dir: Path) -> None:
        environment = {
            "EVALLENS_DATABASE_URL": database_url,
            "EVALLENS_EVAL_MAX_TOKENS": "16",
            "EVALLENS_EVAL_CONCURRENCY": "1",  # slow enough to stop the target in the middle of a run
            "COLUMNS": "300",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evallens", "eval", "watch", "--set", set_name, "--endpoint",
             service_url, "--interval", "1", "--settle", "2", "--report-dir", str(report_dir)],
            env=child_environment(environment), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._incoming: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._incoming.put(line.rstrip("\n"))

    def wait_for(self, fragment: str, timeout_s: float = 300.0) -> str:
        """The next line containing ``fragment`` (earlier lines are kept in ``lines``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self._incoming.get(timeout=1.0)
            except queue.Empty:
                assert self.process.poll() is None, "watch exited:\n" + "\n".join(self.lines)
                continue
            self.lines.append(line)
            if fragment in line:
                return line
        raise AssertionError(f"no line with {fragment!r} in {timeout_s} s:\n" + "\n".join(self.lines))

    def stop(self) -> None:
        """Ctrl-C, as a user would; killed when it does not end within 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=10)  # the pipe ends with the process
        assert self.process.stdout is not None
        self.process.stdout.close()
