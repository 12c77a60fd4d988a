"""Where a notebook's runs are stored: the folder the kernel was in when Lockgate first opened
its default store, kept while the extension stays loaded.

The default store is ``.lockgate/lockgate.db`` under the working directory (as for ``lockgate
run``); a ``%cd`` in a notebook must not move it, or ``%flow runs`` stops listing the runs the
notebook started and new runs go to another file. ``LOCKGATE_STORE``, when set, names the
store as everywhere else.
"""

from __future__ import annotations

import os
from pathlib import Path

_pinned: Path | None = None


def notebook_store() -> str:
    """The store a notebook's runs and ``%flow`` commands use (see the module docstring)."""
    from ..engine.store import ENV_VAR
    from ..engine.store.sqlite import DEFAULT_PATH

    named = os.environ.get(ENV_VAR)
    if named:
        return named
    global _pinned
    if _pinned is None:
        _pinned = Path.cwd() / DEFAULT_PATH
    return str(_pinned)


def forget() -> None:
    """Let the next use pin the store again (the extension is loaded or unloaded)."""
    global _pinned
    _pinned = None
