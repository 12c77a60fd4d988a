"""Looking at processes from tests (Linux ``/proc``): whether one runs, and waiting, bounded,
for a condition about them (a wait that ends as soon as the condition holds, not a sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable

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
