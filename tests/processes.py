"""Looking at processes from tests (Linux ``/proc``): whether one runs, waiting, bounded, for a
condition about them (a wait that ends as soon as the condition holds, not a sleep), and
reaping the ones a test started."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: the bound on a wait (nothing waits for it to pass)
GUARD_S = 30


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not: it has exited and waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds; fail the test, naming ``what``, after :data:`GUARD_S`."""
    deadline = time.monotonic() + GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"waited {GUARD_S} s for {what}"
        time.sleep(0.02)


def written_pid(path: Path, what: str) -> int:
    """The pid a command writes to ``path`` once it has started (``what`` names it if it never does)."""
    wait_until(path.exists, what)
    return int(path.read_text())


@contextmanager
def reaped(child: subprocess.Popen[str], pid_file: Path) -> Iterator[subprocess.Popen[str]]:
    """``child``, killed on the way out if it still runs, with the process whose pid it left in
    ``pid_file`` (a failing test must not leak a ``sleep``)."""
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        kill_written(pid_file)


def kill_written(pid_file: Path) -> None:
    """Kill the process whose pid is in ``pid_file``, if it still runs."""
    if pid_file.exists() and running(int(pid_file.read_text())):
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
