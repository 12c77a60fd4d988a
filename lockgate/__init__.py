"""Lockgate: declarative, governed AI-agent workflows.

"Your agent proposes the step. Lockgate decides whether it actually finished."

The public API is re-exported lazily so that ``import lockgate`` stays fast:

- :func:`load` parses and validates a spec (``lockgate.dsl``);
- :class:`Engine` is the consumer protocol over a store (``lockgate.engine``);
- :func:`run` (async) and :func:`run_sync` drive a flow with agents (``lockgate.engine.runner``);
- ``%load_ext lockgate`` loads the IPython extension (``lockgate.kernel_ext``).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load": "lockgate.dsl.loader",
    "LoadResult": "lockgate.dsl.loader",
    "Diagnostic": "lockgate.dsl.diagnostics",
    "Engine": "lockgate.engine.engine",
    "run": "lockgate.engine.runner",
    "run_sync": "lockgate.engine.runner",
    "resume": "lockgate.engine.runner",
    "LockgateError": "lockgate.errors",
}

__all__ = [*_EXPORTS, "load_ipython_extension", "unload_ipython_extension", "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lockgate' has no attribute {name!r}")
    return getattr(import_module(module), name)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext lockgate``: register the ``%%flow`` magics and widgets."""
    import_module("lockgate.kernel_ext").load_ipython_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    import_module("lockgate.kernel_ext").unload_ipython_extension(ipython)
