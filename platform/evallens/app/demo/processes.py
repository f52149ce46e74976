"""Child processes the demo and the benches start: each logs to a file, is waited on until healthy,
and is stopped."""

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from evallens.errors import EvallensError
from evallens.settings import child_environment


class ProcessFailed(EvallensError):
    """A child process exited or never became healthy."""


GROUP_KILL_WAIT_S = 10.0  # after SIGKILL: a process stuck in the kernel may take a moment to go
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _parent_death_signal() -> Callable[[], None] | None:
    """What the child runs between fork and exec to have the kernel SIGTERM it when its parent dies,
    even by SIGKILL (Linux only; elsewhere nothing)."""
    if sys.platform != "linux":
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # looked up here: the child only calls it

    def set_signal() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_signal


@dataclass
class ManagedProcess:
    """One child process with its log file.

    ``stop_group``: ``stop`` signals the child's whole process group, so what it spawned (an engine
    core, a worker) goes with it. ``die_with_parent``: the child gets SIGTERM when the process that
    started it dies, however it dies (Linux; the parent is the thread that called ``start``).
    """

    name: str
    command: Sequence[str]
    log_path: Path
    environment: Mapping[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    stop_group: bool = False
    die_with_parent: bool = False

    def start(self) -> None:
        """Start the process, appending its output to ``log_path``."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.command),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_environment(self.environment),
                start_new_session=True,  # Ctrl-C reaches the demo, which stops children in order
                preexec_fn=_parent_death_signal() if self.die_with_parent else None,
            )

    def wait_healthy(self, url: str, timeout_s: float) -> None:
        """Poll ``url`` until it answers 200; fail with the log's location if the process dies."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ProcessFailed(
                    f"{self.name} exited with code {self.process.returncode}; see {self.log_path}"
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise ProcessFailed(
            f"{self.name} was not healthy at {url} after {timeout_s:.0f} s; see {self.log_path}"
        )

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``: the process, or with ``stop_group`` its group."""
        if self.stop_group and self.process is not None:
            self._stop_group(self.process, timeout_s)
            return
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    @staticmethod
    def _stop_group(process: subprocess.Popen[bytes], timeout_s: float) -> None:
        """SIGTERM the process group, wait until it is empty, SIGKILL what is left. The group is
        signalled even when its leader has exited: what it spawned may still be running."""
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, GROUP_KILL_WAIT_S)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                process.poll()  # reap the leader: an unreaped leader keeps the group alive
                try:
                    os.killpg(process.pid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.2)
        process.poll()

    @property
    def pid(self) -> int:
        """The started process's id."""
        if self.process is None:
            raise ProcessFailed(f"{self.name} is not started")
        return self.process.pid

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self.process is not None and self.process.poll() is None


@dataclass
class ProcessGroup:
    """The demo's children, stopped in reverse start order."""

    processes: list[ManagedProcess] = field(default_factory=list)

    def add(self, process: ManagedProcess) -> ManagedProcess:
        """Start ``process`` and remember it for ``stop_all``."""
        process.start()
        self.processes.append(process)
        return process

    def stop(self, name: str) -> None:
        """Stop and forget the process called ``name``."""
        for process in [p for p in self.processes if p.name == name]:
            process.stop()
            self.processes.remove(process)

    def stop_all(self) -> None:
        """Stop every child, newest first."""
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()


@contextmanager
def healthy(
    process: ManagedProcess, health_url: str, timeout_s: float, stop_timeout_s: float = 20.0
) -> Iterator[ManagedProcess]:
    """Start ``process``, wait until ``health_url`` answers 200 (failing with its log's location if it
    dies or takes longer than ``timeout_s``), and stop it on the way out, however the block ends."""
    process.start()
    try:
        process.wait_healthy(health_url, timeout_s)
        yield process
    finally:
        process.stop(stop_timeout_s)
