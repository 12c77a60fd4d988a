"""The IPython extension: ``%load_ext lockgate``.

``%%flow NAME`` validates and draws a spec cell and binds it; runs start as asyncio tasks on the
kernel's loop, render a live DAG, and turn gates into Approve / Revise / Kill buttons. Heavy
imports (matplotlib, ipywidgets, the engine) happen on first use, not on load.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_loaded: dict[int, Any] = {}

#: The first ipykernel that hands a comm message (a gate button's click) to its widget while a
#: cell awaits (ipykernel PR #1565); an older one queues the click behind the running cell.
BUTTONS_WHILE_AWAITING = (7, 4)


def load_ipython_extension(ipython: Any) -> None:
    from .magics import FlowMagics

    magics = FlowMagics(ipython)
    ipython.register_magics(magics)
    _loaded[id(ipython)] = magics
    warning = old_kernel_warning(ipython)
    if warning:
        print(warning, file=sys.stderr)


def old_kernel_warning(ipython: Any) -> str | None:
    """What to say when the kernel's ipykernel is older than :data:`BUTTONS_WHILE_AWAITING`: a
    cell awaiting a run waits for a click the kernel only reads once the cell ends, so the
    documented flow (await the run, click Approve) hangs. None in a newer kernel, and outside
    one (a terminal IPython shows no buttons)."""
    if getattr(ipython, "kernel", None) is None:
        return None
    version = getattr(sys.modules.get("ipykernel"), "__version__", "")
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or tuple(map(int, found.groups())) >= BUTTONS_WHILE_AWAITING:
        return None
    least = ".".join(map(str, BUTTONS_WHILE_AWAITING))
    return (f"warning: this kernel runs ipykernel {version}: the Approve / Revise / Kill buttons of a gate do not "
            f"answer while a cell awaits its run (`await run`, `await run.wait_until(...)`): the click waits for the "
            f"cell, which waits for the click, until you interrupt the kernel. Install ipykernel {least} or later "
            f"in the kernel's environment (pip install 'ipykernel>={least}') and restart the kernel. Until then, "
            f"click while no cell runs, or decide in code: run.approve(step), run.revise(step, note), "
            f"run.kill(step), %flow approve RUN STEP.")


def unload_ipython_extension(ipython: Any) -> None:
    magics = _loaded.pop(id(ipython), None)
    if magics is None:
        return
    magics.detach()
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("flow", None)
    manager.registry.pop(type(magics).__name__, None)
