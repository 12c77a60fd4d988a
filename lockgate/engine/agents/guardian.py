"""The process groups a process starts die with it, however it dies.

A runner kills its commands' process groups when it stops them (see
:mod:`lockgate.engine.agents.process`), but a runner killed with SIGKILL stops nothing: its agent
commands and evaluate commands would run on, and a resume of the run would start them again
beside them, two writers in one workspace.

So the first group a process starts also starts its *guardian*: a small Python process, in a
session of its own, whose stdin is a pipe only this process writes to. This process writes
``+PGID`` when it starts a group and ``-PGID`` once the group has ended. When this process
exits, the kernel closes its end of the pipe, whatever killed it; the guardian reads end of
file, sends SIGTERM to every group still listed, gives them :data:`GRACE_S` seconds, sends
SIGKILL to what is left, and exits. A guardian that cannot be started (or dies) is started
again at the next group, with every group still running; if that fails too, commands run
unguarded, as before, rather than not at all. POSIX only (nothing to guard elsewhere: there
are no process groups to kill).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading

#: Seconds the guardian gives the groups it SIGTERMs before it SIGKILLs them (as a runner does).
GRACE_S = 2.0
#: The guardian's command line ends with this word and the pid of the process it guards, so that
#: another process can tell that a dead process's commands are still being stopped
#: (:func:`guardian_of`).
MARK = "lockgate-guardian-of"

# Runs with -I -S: no site, no lockgate import, so it starts in a few milliseconds.
_SCRIPT = f"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    sign, number = line[:1], line[1:].strip()
    if number.isdigit():
        (groups.add if sign == b"+" else groups.discard)(int(number))

def signal_all(sig):
    alive = set()
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except OSError:
            continue
        alive.add(pgid)
    return alive

groups = signal_all(signal.SIGTERM)
deadline = time.monotonic() + {GRACE_S!r}
while groups and time.monotonic() < deadline:
    time.sleep(0.05)
    groups = signal_all(0)
signal_all(signal.SIGKILL)
"""


class Guardian:
    """This process's guardian: :meth:`watch` a group when it starts, :meth:`forget` it once it
    has ended. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()

    def start(self) -> None:
        """Have the guardian running before a group starts: the group's :meth:`watch` then only
        writes a line (a group started while a process is being killed is otherwise missed)."""
        with self._lock:
            if not self._running():
                self._process = self._start()

    def watch(self, pgid: int) -> None:
        """Kill group ``pgid`` if this process dies before it :meth:`forget` s it."""
        with self._lock:
            self._groups.add(pgid)
            self._send(b"+%d\n" % pgid)

    def forget(self, pgid: int) -> None:
        """Group ``pgid`` has ended (its leader reaped, the rest killed): leave it be."""
        with self._lock:
            self._groups.discard(pgid)
            self._send(b"-%d\n" % pgid)

    def _running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _send(self, line: bytes) -> None:
        if not self._running():
            self._process = self._start()
            return  # the new guardian was told every group (this one included)
        process = self._process
        try:
            assert process is not None and process.stdin is not None
            process.stdin.write(line)
            process.stdin.flush()
        except OSError:  # it died between the poll and the write: the next line starts another
            self._process = None

    def _start(self) -> subprocess.Popen[bytes] | None:
        if os.name != "posix":
            return None
        try:
            process = subprocess.Popen([sys.executable, "-I", "-S", "-c", _SCRIPT, MARK, _guarded(os.getpid())],
                                       stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
            assert process.stdin is not None
            process.stdin.write(b"".join(b"+%d\n" % pgid for pgid in self._groups))
            process.stdin.flush()
        except OSError:
            return None
        threading.Thread(target=self._revive, args=(process,), name="lockgate-guardian", daemon=True).start()
        return process

    def _revive(self, process: subprocess.Popen[bytes]) -> None:
        """Start another guardian if this one dies (someone killed it) while groups still run:
        the command already running stays guarded, not only the next one."""
        process.wait()
        with self._lock:
            if self._process is process and self._groups:
                self._process = self._start()

    def close(self) -> None:
        """At exit: close the pipe and let the guardian stop what still runs (nothing, usually:
        it then exits at once) before this process is gone."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(GRACE_S + 1)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def _after_fork(self) -> None:
        """In a forked child: let the parent's guardian go (its pipe end closed here, or the
        guardian would wait for this child too) and start one of its own when needed."""
        self._lock = threading.Lock()
        process, self._process, self._groups = self._process, None, set()
        if process is not None:
            _INHERITED.append(process)  # the parent's child, not ours: never finalised (waited for) here
            if process.stdin is not None:
                try:
                    process.stdin.close()
                except OSError:
                    pass


_INHERITED: list[subprocess.Popen[bytes]] = []


GUARDIAN = Guardian()
atexit.register(GUARDIAN.close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=GUARDIAN._after_fork)


def _guarded(pid: int, started: str | None = None) -> str:
    """How a guardian's command line names the process it guards: its pid and start time (a
    later process given the same pid is another one)."""
    from ..drivers import process_start  # here: drivers imports this module lazily too

    return f"{pid}@{started if started is not None else process_start(pid)}"


def guardian_of(pid: int, started: str | None) -> int | None:
    """The pid of a guardian still running for process ``pid`` that started at ``started`` (which
    may be dead: its guardian is then stopping its commands), or None: none runs, or this system
    has no ``/proc`` to tell."""
    wanted = f"\0{MARK}\0{_guarded(pid, started)}\0".encode()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if wanted in cmdline.read() + b"\0":
                    return int(entry)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return None
