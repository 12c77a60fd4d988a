"""A step's row while its children run: fanout items (``measure/3``) and subflow steps
(``ship/push``) report progress under the step's node, which is running until the step itself
ends, whatever each child's own outcome.

The runner reports no event for the end of such a step (its children's events are all it
emits), so once none of its children is running the store says how the step stands: read once,
by :meth:`NotebookRun._look_up_nodes`, for every node waiting to be looked up since the last
read (at most one read per redraw interval, whatever the number of items).
"""

from __future__ import annotations

#: child events after which the child is working: the node is running
_WORKING = ("step_started", "step_retrying")
#: child events after which the child is no longer working
_STOPPED = ("step_succeeded", "step_failed", "step_skipped")


class Children:
    """The children of each node working now; ``waiting_gate``: nodes a child gate waits in."""

    def __init__(self) -> None:
        self.working: dict[str, set[str]] = {}
        self.waiting_gate: dict[str, set[str]] = {}

    def status(self, node: str, child: str, kind: str) -> tuple[str | None, bool]:
        """(the node's status after event ``kind`` of ``child``, None to leave it; whether the
        node is to be looked up in the store: nothing of it works or waits any more)."""
        working = self.working.setdefault(node, set())
        gates = self.waiting_gate.setdefault(node, set())
        if kind in _WORKING:
            working.add(child)
        elif kind in _STOPPED:
            working.discard(child)
        elif kind == "gate_waiting":
            gates.add(child)
        elif kind == "gate_resolved":
            gates.discard(child)
        else:
            return None, False
        if gates:  # a gate inside the step waits for a decision: so does the step
            return "waiting", False
        return "running", not working

    def idle(self, node: str) -> bool:
        """Whether nothing of ``node`` works or waits now (its store status is then worth reading)."""
        return not self.working.get(node) and not self.waiting_gate.get(node)
