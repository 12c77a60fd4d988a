"""What a running run waits on, for ``lockgate runs``: a gate (a person's decision), a live
process driving it (or stopping, or running only its evaluate commands), or nobody (it is idle
until someone resumes it).

The store keeps every running run as ``running``, whatever it waits on. Telling them apart
reads the run's stored records (its waiting gates are the records whose status is
``waiting_gate``; its driver is the ``@driver`` record) without rebuilding the run: no spec is
compiled, so a listing stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.drivers import DRIVER_KEY, Driver, holding
from ..engine.explain import command_of
from ..engine.model import READY, RUNNING, WAITING_GATE
from ..errors import StoreError

#: ``lockgate runs --status`` for the running runs a gate holds (the protocol's word for them).
AWAIT_GATE = "await_gate"


@dataclass(frozen=True, slots=True)
class Waits:
    """A running run's gates waiting for a decision, the live process holding it (if any), and
    the steps dispatched to agents and evaluate steps running their commands (outstanding)."""

    gates: tuple[str, ...]
    driver: Driver | None
    dispatched: tuple[str, ...] = ()
    evaluating: tuple[str, ...] = ()

    def describe(self) -> str:
        """In words: ``waiting at gate review``, ``driven by process 812``, ``idle``, or what
        else holds it up (a drive stopping, a process running only its commands)."""
        gates = f"waiting at gate{'s' * (len(self.gates) > 1)} {', '.join(self.gates)}" if self.gates else ""
        held = self._held()
        if gates:
            return f"{gates}; {held}" if held else gates
        return held or "idle (nobody drives it: resume it)"

    def _held(self) -> str:
        """Who holds the run up besides its gates, or "" when only the gates do."""
        driver = self.driver
        if driver is None:  # outstanding work with no live process at it: a resume does it
            return "idle otherwise (resume it)" if self.gates and (self.dispatched or self.evaluating) else ""
        process = f"process {driver.pid}" + ("" if driver.host == _here() else f" on {driver.host}")
        if driver.stopping:
            return f"{process} is stopping (Ctrl-C): resume it once that process has exited"
        if driver.commands_only:
            after = "; idle otherwise (resume it once that ends)" if self.dispatched else ""
            return f"{process} is running {command_of(list(self.evaluating))}{after}"
        return f"driven by {process}"

    def to_dict(self) -> dict[str, Any]:
        driver = None if self.driver is None else {
            "pid": self.driver.pid, "host": self.driver.host, "stopping": self.driver.stopping,
            "commands_only": self.driver.commands_only}
        return {"gates": list(self.gates), "driver": driver, "waiting_on": self.describe()}


def waits_of(store: Any, run_id: str) -> Waits:
    """What running run ``run_id`` waits on, from its stored records."""
    records = store.load_run(run_id).steps
    gates, dispatched, evaluating = [], [], []
    for key, record in records.items():
        if not isinstance(record, dict) or record.get("dropped"):
            continue
        status = record.get("status")
        if status == WAITING_GATE:
            gates.append(key)
        elif status == READY:
            dispatched.append(key)
        elif status == RUNNING and "command_input" in record:
            evaluating.append(key)
    return Waits(tuple(sorted(gates)), holding(records.get(DRIVER_KEY)), tuple(sorted(dispatched)),
                 tuple(sorted(evaluating)))


def at_gates(store: Any, limit: int) -> list[tuple[dict[str, Any], Waits]]:
    """The newest ``limit`` running runs with a gate waiting for a decision, with their waits.

    The store lists by status only, so running runs are read in growing batches until enough
    wait at a gate or none are left."""
    batch = limit
    read: dict[str, Waits] = {}
    while True:
        running = store.list_runs(status="running", limit=batch)
        found = []
        for summary in running:
            waits = read.get(summary.run_id)
            if waits is None:
                try:
                    waits = read[summary.run_id] = waits_of(store, summary.run_id)
                except StoreError:  # damaged: no gate of it can be read, and the others still can
                    waits = read[summary.run_id] = Waits((), None)
            if waits.gates:
                found.append((summary.to_dict(), waits))
                if len(found) == limit:
                    return found
        if len(running) < batch:
            return found
        batch *= 4


def unreadable(run_id: str, exc: Exception) -> dict[str, Any]:
    """``Waits.to_dict`` for a running run whose records cannot be read (edited or damaged)."""
    return {"gates": [], "driver": None, "waiting_on": f"unreadable: its records are damaged (lockgate show "
                                                      f"{run_id} says how)", "error": str(exc)}


def _here() -> str:
    import socket

    return socket.gethostname()
