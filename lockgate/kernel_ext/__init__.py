"""The IPython extension: ``%load_ext lockgate``.

``%%flow NAME`` validates and draws a spec cell and binds it; runs start as asyncio tasks on the
kernel's loop, render a live DAG, and turn gates into Approve / Revise / Kill buttons. Heavy
imports (matplotlib, ipywidgets, the engine) happen on first use, not on load.
"""

from __future__ import annotations

from typing import Any

_loaded: dict[int, Any] = {}


def load_ipython_extension(ipython: Any) -> None:
    from .magics import FlowMagics

    magics = FlowMagics(ipython)
    ipython.register_magics(magics)
    _loaded[id(ipython)] = magics


def unload_ipython_extension(ipython: Any) -> None:
    magics = _loaded.pop(id(ipython), None)
    if magics is None:
        return
    magics.detach()
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("flow", None)
    manager.registry.pop(type(magics).__name__, None)
