"""Where a notebook's runs are stored: the folder the kernel was in when Lockgate first opened
its default store, kept for the rest of the kernel's session (a ``%reload_ext`` included).

The default store is ``.lockgate/lockgate.db`` under the working directory (as for ``lockgate
run``); a ``%cd`` in a notebook must not move it, or ``%flow runs`` stops listing the runs the
notebook started and new runs go to another file. ``LOCKGATE_STORE``, when set, names the
store as everywhere else.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

#: each shell's pinned store file (a shell is the kernel's session)
_pinned: weakref.WeakKeyDictionary[Any, Path] = weakref.WeakKeyDictionary()


def notebook_store() -> str:
    """The store a notebook's runs and ``%flow`` commands use (see the module docstring)."""
    from IPython import get_ipython

    from ..engine.store import ENV_VAR
    from ..engine.store.sqlite import DEFAULT_PATH

    named = os.environ.get(ENV_VAR)
    if named:
        return named
    shell = get_ipython()
    if shell is None:  # outside IPython: the working directory's, as for the CLI
        return str(Path.cwd() / DEFAULT_PATH)
    if shell not in _pinned:
        _pinned[shell] = Path.cwd() / DEFAULT_PATH
    return str(_pinned[shell])
