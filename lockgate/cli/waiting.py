"""What a running run waits on, for ``lockgate runs``: a gate (a person's decision), a live
process driving it, or nobody (it is idle until someone resumes it).

The store keeps every running run as ``running``, whatever it waits on. Telling them apart
reads the run's stored records (its waiting gates are the records whose status is
``waiting_gate``; its driver is the ``@driver`` record) without rebuilding the run: no spec is
compiled, so a listing stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.drivers import DRIVER_KEY, Driver, holding
from ..engine.model import WAITING_GATE

#: ``lockgate runs --status`` for the running runs a gate holds (the protocol's word for them).
AWAIT_GATE = "await_gate"


@dataclass(frozen=True, slots=True)
class Waits:
    """A running run's gates waiting for a decision and the live process driving it (if any)."""

    gates: tuple[str, ...]
    driver: Driver | None

    def describe(self) -> str:
        """In words: ``waiting at gate review``, ``driven by process 812``, or ``idle``."""
        driven = f"driven by process {self.driver.pid}" + (
            "" if self.driver.host == _here() else f" on {self.driver.host}") if self.driver else ""
        if self.gates:
            gates = f"waiting at gate{'s' * (len(self.gates) > 1)} {', '.join(self.gates)}"
            return f"{gates}; {driven}" if driven else gates
        return driven or "idle (nobody drives it: resume it)"

    def to_dict(self) -> dict[str, Any]:
        driver = None if self.driver is None else {"pid": self.driver.pid, "host": self.driver.host}
        return {"gates": list(self.gates), "driver": driver, "waiting_on": self.describe()}


def waits_of(store: Any, run_id: str) -> Waits:
    """What running run ``run_id`` waits on, from its stored records."""
    records = store.load_run(run_id).steps
    gates = tuple(sorted(key for key, record in records.items()
                         if isinstance(record, dict) and record.get("status") == WAITING_GATE))
    return Waits(gates, holding(records.get(DRIVER_KEY)))


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
                waits = read[summary.run_id] = waits_of(store, summary.run_id)
            if waits.gates:
                found.append((summary.to_dict(), waits))
                if len(found) == limit:
                    return found
        if len(running) < batch:
            return found
        batch *= 4


def _here() -> str:
    import socket

    return socket.gethostname()
