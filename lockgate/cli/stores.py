"""The run store of the commands that read or steer existing runs (``runs``, ``show``, ``gate``,
``graph RUN``...): they open a store that exists and never create one.

Only ``lockgate run`` creates a store. Elsewhere a missing default store (``.lockgate/lockgate.db``
here) simply holds no runs, and a missing store named by ``--store`` or ``LOCKGATE_STORE`` is
an error: a mistyped path used to create an empty database (and its directories) and answer
"no runs". So is an empty file (0 bytes): SQLite would take it for a new database and these
commands would write a store's tables into it, answering "no runs" for a store a crash or a full
disk truncated, or for any empty file named by mistake. (``lockgate run`` still makes an empty
file a new store: one made on purpose, as ``--store "$(mktemp)"`` does, holds nothing to lose.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import NotAStore, StoreError

MEMORY = {"memory", "memory://", ":memory:"}


class MissingStore(StoreError):
    """A store named by ``--store`` or ``$LOCKGATE_STORE`` that does not exist (a usage error:
    the name is wrong, or the run was started elsewhere)."""


class EmptyStore(NotAStore):
    """A SQLite store file that is empty (0 bytes): truncated, or not a store at all; refused,
    and left as it is, by the commands that never create a store."""


def open_existing(store: str | None) -> Any:
    """The store ``store`` names (else ``$LOCKGATE_STORE``, else the default), if it exists
    (and is not an empty file)."""
    from ..engine.store import ENV_VAR, MemoryStore, open_store

    target = _target(store)
    path = sqlite_path(target)
    if path is None:
        return open_store(target)
    if path.exists():
        _refuse_empty(path)
        return open_store(target)
    if target is None:
        return MemoryStore(where=f"{path}, which does not exist: no run was started in this folder (run the "
                                 "command where the run was started, or pass --store)")
    raise MissingStore(f"no run store at {path} (`lockgate run` creates it; check --store or ${ENV_VAR})")


def _refuse_empty(path: Path) -> None:
    """Raise :class:`EmptyStore` when the file at ``path`` is empty (0 bytes)."""
    try:
        empty = path.is_file() and path.stat().st_size == 0
    except OSError:  # opening it says what is wrong
        return
    if empty:
        raise EmptyStore(f"{path} is an empty file (0 bytes), not a Lockgate run store: a store truncated by a "
                         "crash or a full disk, or the wrong file named; it was left as it is")


def ephemeral(store: Any) -> bool:
    """Whether ``store`` keeps its runs only in this process's memory (a memory store, or SQLite
    opened as ``:memory:``), so that they are gone when it exits."""
    from ..engine.store import MemoryStore, SQLiteStore

    return isinstance(store, MemoryStore) or (isinstance(store, SQLiteStore) and str(store.path) == ":memory:")


def missing(store: str | None) -> Path | None:
    """The SQLite file that ``store`` (or ``$LOCKGATE_STORE``) names when it does not exist: the
    default store is not named, so never this."""
    return absent(store) if _target(store) is not None else None


def absent(store: str | None) -> Path | None:
    """The SQLite file ``store`` (else ``$LOCKGATE_STORE``, else the default) names when it does
    not exist: :func:`missing`, the default store included."""
    path = sqlite_path(_target(store))
    return path if path is not None and not path.exists() else None


def _target(store: str | None) -> str | None:
    from ..engine.store import ENV_VAR

    return store if store is not None else os.environ.get(ENV_VAR) or None


def sqlite_path(target: str | None) -> Path | None:
    """The SQLite file ``target`` names, or None when it names another backend (or nothing
    valid: ``open_store`` then says what is wrong)."""
    from ..engine.store.sqlite import DEFAULT_PATH

    if target is None:
        return Path.cwd() / DEFAULT_PATH
    from ..engine.store import mistyped_url, sqlite_file

    if (not target.strip() or target in MEMORY or target.startswith(("postgresql://", "postgres://"))
            or mistyped_url(target)):
        return None
    if target.startswith("sqlite://"):
        target = target.removeprefix("sqlite://")
    elif "://" in target:
        return None

    return sqlite_file(target)
