"""Who drives a run: the claim a runner holds on a run while it calls the run's agents.

Two runners driving one run would both call the agent of every outstanding step (tokens keep
the second answer out, but the call was made and paid for). So a runner claims the run before
it drives it, in a transaction, and a second runner is refused while the first one is alive.

"Alive" is decided without trusting the claim's age alone. A claim made on this host, in this
pid namespace (containers may share a host name), names its process (pid and start time): a
claim of a process that died (killed, crashed) is free at once, one of a process that still runs
holds however long its loop has been busy, and one of this very process holds only while its
drive runs. Elsewhere (another host sharing a PostgreSQL store, another pid namespace, Windows)
a claim holds while it is renewed: the driver renews it every :data:`RENEW_S` seconds, and it
lapses :data:`STALE_S` seconds after the last renewal. Clocks of hosts sharing a store are
assumed to agree within seconds.

A claim of a run that ended means nothing, and a claim can be taken over on purpose (its
process is gone for good but another host cannot tell): the outstanding dispatches get new
tokens, so the displaced runner, if it lives after all, notices at its agents' next answer
(refused as stale), after a gate decision it applies, or at its next renewal, and stops its calls.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConcurrencyConflict, RunDriven
from .model import RUN_RUNNING, new_token

if TYPE_CHECKING:
    from .live import LiveRun

#: The record holding a run's claim (an engine record: not a step).
DRIVER_KEY = "@driver"
#: Seconds between a driver's renewals of its claim.
RENEW_S = 10.0
#: Seconds after its last renewal that a claim made on another host lapses.
STALE_S = 45.0
#: Tries of a renewal made straight in the store (see :func:`renew_stored`) against other writers.
RENEW_TRIES = 5


@dataclass(frozen=True, slots=True)
class Driver:
    """One drive of a run: ``owner`` tells drives apart (two in one process too), ``host``,
    ``pid`` and ``started`` (the process's start time, when the system tells it) find its
    process, ``renewed_at`` says when it last renewed its claim (seconds since the epoch);
    ``config``: the project configuration file it resolves agents with, ``""`` for none (kept
    when the claim is released, so that a later resume can tell it would resolve them from
    another one); ``pidns``: the process's pid namespace, when the system tells it (containers
    sharing a host name, and a store, number their processes apart); ``agents``: the module its
    Python agents came from (``lockgate run --agents``: a file's resolved path or a dotted name),
    kept too, so that the commands printing how to resume the run can name it; ``judge``: the
    agent name of the judge it was given (``--judge``, ``judge=`` by name; None when it took the
    judge from lockgate.toml or was given none), kept too, so that a resume given no judge
    keeps it and the commands printing how to resume the run name it."""

    owner: str
    host: str
    pid: int
    started: str | None
    renewed_at: float
    config: str | None = None
    pidns: str | None = None
    agents: str | None = None
    #: the drive is stopping (its agents are being stopped): it starts nothing more, so a process
    #: whose decision starts commands waits for the claim to be given up and runs them itself
    #: (see :mod:`lockgate.engine.commands`)
    stopping: bool = False
    #: the claim only runs the run's evaluate commands (an engine deciding for a caller: see
    #: :mod:`lockgate.engine.commands`), not its agents: the dispatched steps are nobody's while
    #: it holds the run, and left for a resume once it is given up (a record without it: a drive)
    commands_only: bool = False
    judge: str | None = None

    @classmethod
    def here(cls, config: str | None = None, agents: str | None = None, *, commands_only: bool = False,
             judge: str | None = None) -> Driver:
        """A new drive by this process, resolving agents with the configuration file ``config``
        and the module ``agents``, judging with the agent named ``judge`` (or, with
        ``commands_only``, a claim for running commands only); it counts as driving until
        :func:`ended` says it stopped."""
        pid = os.getpid()
        driver = cls(uuid.uuid4().hex, socket.gethostname(), pid, process_start(pid), time.time(), config,
                     pid_namespace(), agents, commands_only=commands_only, judge=judge)
        _DRIVING.add(driver.owner)
        return driver

    def renewed(self) -> Driver:
        return replace(self, renewed_at=time.time())

    def to_dict(self) -> dict[str, Any]:
        return {"key": DRIVER_KEY, **asdict(self)}

    @classmethod
    def from_dict(cls, record: Any) -> Driver | None:
        """The claim a stored record holds; None for a released claim or a record that is not one."""
        if not isinstance(record, dict) or not isinstance(record.get("owner"), str):
            return None
        try:
            driver = cls(record["owner"], str(record["host"]), int(record["pid"]),
                         record.get("started"), float(record["renewed_at"]), config_of(record),
                         _text(record, "pidns"), agents_of(record), record.get("stopping") is True,
                         record.get("commands_only") is True, judge_of(record))
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        return driver if driver.pid > 0 else None

    def describe(self, at: float | None = None) -> str:
        """Which process this is, for a person: "process 812 on this host", or one this
        machine cannot look up with when it was last heard from (its claim lapses by age)."""
        if checkable_here(self):
            return f"process {self.pid} on this host"
        where = f"host {self.host}"
        if self.host == socket.gethostname():
            boot = _boot_of(self.pidns)
            where = ("this host, in another pid namespace" if boot is None or boot == _boot_of(pid_namespace())
                     else f"host {self.host} (another machine of that name, or this one before a restart)")
        ago = max(0, round((time.time() if at is None else at) - self.renewed_at))
        return f"process {self.pid} on {where} (last heard from {ago} s ago)"


# -- transitions (each applied to a live run in a transaction of its own) ---------------------


def claim(run: LiveRun, driver: Driver, take_over: bool = False) -> None:
    """Make ``driver`` the run's driver; RunDriven when another live driver holds it, unless
    ``take_over`` (then the audit records whom it displaced). A run that ended is claimed freely."""
    holder = holding(run.driver) if run.header.status == RUN_RUNNING else None
    if holder is not None and holder.owner != driver.owner:
        if not take_over:
            raise refusal(run.header.id, holder, list(run.evaluating))
        run.event("drive_taken_over", None, by={"host": driver.host, "pid": driver.pid},
                  displaced={"host": holder.host, "pid": holder.pid}, reissued=_reissue(run))
    elif holder is None:
        await_stopped(run.driver)
    _write(run, driver.to_dict())


def await_stopped(record: Any) -> None:
    """Wait (a few seconds at most) until the commands of a dead process on this host are
    stopped, its agent commands and evaluate commands alike: its guardian sends them SIGTERM when
    it dies and SIGKILL :data:`GRACE_S` later, and one started again meanwhile would run beside
    one still cleaning up (two writers in one workspace)."""
    dead = Driver.from_dict(record)
    if (dead is None or dead.started is None or (dead.pid, dead.started) in _STOPPED or not checkable_here(dead)
            or dead.pid == os.getpid() or process_alive(dead.pid, dead.started)):  # a live one stops its own
        return
    # here, not at import: the agents package imports httpx
    from .agents.guardian import GRACE_S, guardian_of

    deadline = time.monotonic() + GRACE_S + 1.0
    while guardian_of(dead.pid, dead.started) is not None:
        if time.monotonic() >= deadline:
            return
        time.sleep(0.05)
    _STOPPED.add((dead.pid, dead.started))  # its guardian is gone for good: no need to look again


#: Dead processes (pid, start time) whose guardian this process saw gone (see await_stopped): a
#: resume reaches await_stopped up to three times (the runner, the claim, Engine.resume).
_STOPPED: set[tuple[int, str]] = set()


def _reissue(run: LiveRun) -> list[str]:
    """New tokens for the run's outstanding dispatches (the keys): what the displaced driver's
    agents report for them afterwards is stale, and tells it it was taken over. A result held
    on its step while a judge was asked moves to the new token (nothing reported is lost).
    Waiting gates keep theirs: a person holding one may still decide (the displaced driver
    checks its claim after each decision it applies)."""
    keys = list(run.outstanding)
    for key in keys:
        st = run.steps[key]
        held, st.token = st.held_for(st.token), new_token()
        if held is not None:
            st.parked = {**held, "token": st.token}
        run.touch(st)
    return keys


def refusal(run_id: str, holder: Driver, running: Sequence[str] = ()) -> RunDriven:
    """The error for driving run ``run_id`` while ``holder`` holds it, worded for what it does:
    drives the run, stops its drive (Ctrl-C: a resume waits until it has exited), or only runs
    the commands of the evaluate steps ``running`` (a resume waits until they end)."""
    from .explain import commands_words, stopping_words  # explain imports this module

    who = holder.describe()
    if holder.stopping:
        why = f"run {run_id}: {stopping_words(who)}; resume once it has exited"
    elif holder.commands_only:
        why = f"run {run_id}: {commands_words(who, list(running))}; resume once {_end_of(running)}"
    else:
        why = (f"run {run_id} is being driven by {who}; driving it here too would call its agents or run its "
               "commands a second time")
    return RunDriven(why, run_id=run_id, driver=holder.to_dict())


def _end_of(running: Sequence[str]) -> str:
    """When the commands of ``running`` are over: "it ends" for one, "they end" otherwise."""
    return "it ends" if len(running) == 1 else "they end"


def stopping(run: LiveRun, driver: Driver) -> None:
    """Mark ``driver``'s claim as its drive's stopping (nothing, if another holds the run now)."""
    current = Driver.from_dict(run.driver)
    if current is not None and current.owner == driver.owner:
        _write(run, replace(current, stopping=True).to_dict())


def renew(run: LiveRun, driver: Driver) -> None:
    """Renew ``driver``'s claim; RunDriven when it is no longer the run's driver (taken over). A
    claim marked stopping stays so: a drive renews it while its agents stop, and a process
    deciding meanwhile must still run the commands it starts itself."""
    current = Driver.from_dict(run.driver)
    if current is None or current.owner != driver.owner:
        by = current.describe() if current is not None else "another process"
        raise RunDriven(f"run {run.header.id} is no longer driven here: {by} took it over",
                        run_id=run.header.id, by=by)
    _write(run, replace(driver.renewed(), stopping=current.stopping or driver.stopping).to_dict())


def renew_stored(store: Any, run_id: str, driver: Driver) -> bool:
    """Renew ``driver``'s claim in ``store`` itself, not through an engine: for a claim renewed
    from a thread of its own while the engine serves other calls (an engine's runs in memory are
    one caller's at a time). False when the run is no longer ``driver``'s (taken over, given up
    or ended); True too when other writers kept the run busy (renewed at the next turn)."""
    for _ in range(RENEW_TRIES):
        stored = store.load_run(run_id)
        current = Driver.from_dict(stored.steps.get(DRIVER_KEY))
        if stored.header.get("status") != RUN_RUNNING or current is None or current.owner != driver.owner:
            return False
        record = replace(driver.renewed(), stopping=current.stopping).to_dict()
        try:
            store.save_run(run_id, expected_version=stored.version, header={**stored.header, "updated_at": time.time()},
                           steps={DRIVER_KEY: record}, events=[])
        except ConcurrencyConflict:
            continue
        return True
    return True


class WorkLeft(Exception):
    """The run has work for its driver (dispatches, commands) or has ended: see :func:`let_go`."""


def let_go(run: LiveRun, driver: Driver) -> None:
    """Give up ``driver``'s claim on a run it has nothing left to do for; WorkLeft, changing
    nothing, when the run has work for a driver after all (a decision made elsewhere while it
    held the run left the work to it) or has ended."""
    if run.header.status != RUN_RUNNING or run.outstanding or run.evaluating:
        raise WorkLeft
    release(run, driver)


def release(run: LiveRun, driver: Driver) -> None:
    """Give up ``driver``'s claim (left as it is when another driver holds the run now)."""
    current = Driver.from_dict(run.driver)
    if current is not None and current.owner == driver.owner:
        vacate(run)


def vacate(run: LiveRun) -> None:
    """Leave the run claimed by nobody (what its agents were resolved with is kept): a drive
    gave it up, or a revert brought an ended run back, whose last drive has returned."""
    kept = {name: value for name in ("config", "agents", "judge") if (value := _text(run.driver, name)) is not None}
    _write(run, {"key": DRIVER_KEY, "owner": None, **kept})


def config_of(record: Any) -> str | None:
    """The configuration file the run's last driver resolved agents with: ``""`` when it had
    none, None when that is not recorded (no drive yet, or one by an older Lockgate)."""
    return _text(record, "config")


def agents_of(record: Any) -> str | None:
    """The ``--agents`` module the run's last driver took Python agents from: None when it took
    none, or that is not recorded (no drive yet, or one by an older Lockgate)."""
    return _text(record, "agents") or None


def judge_of(record: Any) -> str | None:
    """The agent name of the judge the run's last driver was given: None when it was given
    none by name (lockgate.toml's judge, a Python callable, none), or that is not recorded."""
    return _text(record, "judge") or None


def _text(record: Any, name: str) -> str | None:
    """The string ``record[name]`` of a stored driver record (None if absent or not a string)."""
    value = record.get(name) if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def commands_ours(run: LiveRun, driver: Driver | None) -> bool:
    """Whether the commands the run has running are the caller's to start again: no live driver
    runs them, or ``driver`` (the caller's) is that driver."""
    holder = holding(run.driver)
    return holder is None or (driver is not None and holder.owner == driver.owner)


def _write(run: LiveRun, record: dict[str, Any]) -> None:
    run.driver = record
    run.extra_records[DRIVER_KEY] = record


#: The owners of the drives this process has going: a claim of this process whose drive has
#: stopped (its release could not be written: the store failed) binds nobody, though the
#: process lives on (a notebook kernel).
_DRIVING: set[str] = set()


def ended(driver: Driver) -> None:
    """Say that ``driver``, a drive of this process, has stopped."""
    _DRIVING.discard(driver.owner)


def give_up(engine: Any, run_id: str, driver: Driver, *, write: bool = True) -> None:
    """End ``driver``'s drive of run ``run_id`` in this process and, with ``write``, release its
    claim in the store (best effort: a claim left binds nobody in this process, and lapses with
    it elsewhere)."""
    ended(driver)
    with suppress(Exception):
        engine.release(run_id, driver, write=write)  # replayed by the engine on a concurrency conflict


def driving(driver: Driver) -> bool:
    """Whether ``driver``, a drive of this process, is still going."""
    return driver.owner in _DRIVING


def holding(record: Any, at: float | None = None) -> Driver | None:
    """The driver still holding the claim ``record`` describes, or None when the claim is free:
    released, its process gone (this host), or not renewed for :data:`STALE_S` seconds (another
    host)."""
    driver = Driver.from_dict(record)
    if driver is None:
        return None
    if checkable_here(driver):
        if driver.pid == os.getpid() and driver.started == process_start(driver.pid):
            return driver if driver.owner in _DRIVING else None  # this process: its drives say
        return driver if process_alive(driver.pid, driver.started) else None
    return driver if (time.time() if at is None else at) - driver.renewed_at < STALE_S else None


def pid_namespace() -> str | None:
    """This process's pid namespace on this machine since its last boot
    (``pid:[4026531836]@<boot id>``), or None where the system tells neither. The namespace
    alone does not tell machines apart (every host's first namespace has the same number), nor
    does a host name (two machines may share one): the kernel's boot id does, and a pid and its
    start time mean something only within one boot anyway."""
    global _NAMESPACE
    if _NAMESPACE is _UNKNOWN:
        try:
            namespace = os.readlink("/proc/self/ns/pid")
        except OSError:
            namespace = None
        _NAMESPACE = None if namespace is None else f"{namespace}@{_boot_id()}"
    return _NAMESPACE


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            return file.read().strip()
    except (OSError, ValueError):
        return "unknown-boot"


_UNKNOWN: Any = object()
_NAMESPACE: Any = _UNKNOWN


def _forget_namespace() -> None:
    global _NAMESPACE
    _NAMESPACE = _UNKNOWN


if hasattr(os, "register_at_fork"):  # a child may be in a namespace of its own (unshare)
    os.register_at_fork(after_in_child=_forget_namespace)


def checkable_here(driver: Driver) -> bool:
    """Whether this process can look ``driver``'s process up: the same host and pid namespace
    (of the same boot of the same machine), on a system where a pid can be probed (POSIX)."""
    if driver.host != socket.gethostname() or os.name != "posix":
        return False
    here = pid_namespace()
    if driver.pidns is not None and here is not None and "@" not in driver.pidns:
        return driver.pidns == here.partition("@")[0]  # a claim recorded before boot ids were
    return driver.pidns == here


def _boot_of(namespace: str | None) -> str | None:
    return None if namespace is None else namespace.partition("@")[2] or None


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` as the system counts it (clock ticks since boot, from
    ``/proc``), which tells a process from a later one given the same pid; None where there is
    no ``/proc`` or no such process."""
    stat = _stat(pid)
    return stat[19] if stat is not None and len(stat) > 19 else None


def process_alive(pid: int, started: str | None) -> bool:
    """Whether process ``pid`` runs and is the one that started at ``started`` (a zombie, dead
    but not yet reaped, does not run)."""
    stat = _stat(pid)
    if stat is not None:
        return stat[0] != "Z" and (started is None or len(stat) <= 19 or stat[19] == started)
    if os.path.isdir("/proc/self"):  # a system with /proc, and no such process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    except OSError:
        return False
    return True


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (the state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    # the command name is in parentheses and may itself hold ") ": split after the last one
    return text[text.rfind(")") + 2:].split()
