"""Runs started by a cell that is run again: the earlier run goes on (a waiting gate, agents at
work), but its view was replaced by the new output and its variable rebound, so nothing shows it
any more. The new output names it, with the line that stops it (``%flow cancel RUN`` finds the
run object by its id here, so its task stops at once).

A cell is known by the id the front end sends with it (JupyterLab, VS Code), else by its text.
"""

from __future__ import annotations

import sys
from typing import Any


def started_in_cell(shell: Any, run: Any) -> None:
    """Remember that the cell running now started ``run``, and name every run an earlier
    execution of it started that still goes on (not those this execution started: a cell may
    start several, in a loop)."""
    magics = _magics(shell)
    if magics is None or magics.cell_key is None:
        return
    now = getattr(shell, "execution_count", None)
    started = [(count, r) for count, r in magics.cell_runs.get(magics.cell_key, ()) if r is not run and _going(r)]
    if all(count != now for count, _ in started):  # this execution's first start: said once
        for _, old in started:
            print(still_going(old), file=sys.stderr)
    magics.cell_runs[magics.cell_key] = [*started, (now, run)]


def going_run(shell: Any, run_id: str | None) -> Any:
    """The run with id ``run_id`` that a cell started and that is still driven here, None if
    none is (``%flow cancel RUN`` stops it here although no variable holds it any more)."""
    magics = _magics(shell)
    runs = [run for runs in (magics.cell_runs.values() if magics is not None else ()) for _, run in runs]
    return next((run for run in runs if run.run_id == run_id and _going(run)), None)


def still_going(run: Any) -> str:
    """One line: the earlier run of this cell still goes on, and how to stop (or decide) it."""
    rid = run.run_id
    gates = run.waiting_gates()
    if rid is None:  # not planned yet: no id to name it by
        return f"a run started by this cell earlier is still {run.status} (it goes on; the variable it was bound to now holds the new one)"
    if gates:
        return (f"run {rid} started by this cell earlier is still waiting at gate {', '.join(gates)}: "
                f"%flow cancel {rid} stops it (or decide it: %flow approve {rid} {gates[0]})")
    return f"run {rid} started by this cell earlier is still {run.status}: %flow cancel {rid} stops it"


def _going(run: Any) -> bool:
    """Whether ``run`` is still driven here (a run being cancelled is not)."""
    task = run._task
    return task is not None and not task.done() and not task.cancelling()


def _magics(shell: Any) -> Any:
    from . import _loaded

    return _loaded.get(id(shell)) if shell is not None else None
