"""A run's view is updated as output of the cell executing now, so headless executors keep it.

A run's task is created by the cell that starts it, and ipykernel (6.29 on) keeps the parent of
what a task displays in a context variable the task copied: every update of the run's view names
that cell as its parent, long after it ended. JupyterLab applies an ``update_display_data`` to
every output with its display id, whatever its parent; nbclient (so nbconvert and papermill)
only takes messages whose parent is the cell it is executing, and dropped them: the saved
notebook showed a completed run as "starting". Published in the context of the cell executing
now (captured as it starts), an update reaches both; nbclient too applies it to every output
with that display id, the starting cell's included.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any


def executing_cell() -> contextvars.Context | None:
    """The context of the cell executing now (the same object for the whole cell), None between
    cells or outside a kernel with the extension loaded."""
    from IPython import get_ipython

    from . import _loaded

    magics = _loaded.get(id(get_ipython()))
    return getattr(magics, "cell_context", None)


def in_cell(cell: contextvars.Context | None, publish: Callable[[], Any]) -> None:
    """Call ``publish`` as cell ``cell`` would (its output's parent is that cell); as the
    caller would when ``cell`` is None. A fresh copy of the cell's context is entered each time:
    a context cannot be entered twice at once, and nothing ``publish`` sets stays in it."""
    if cell is None:
        publish()
    else:
        cell.copy().run(publish)
