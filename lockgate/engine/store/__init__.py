"""Durable run state: the :class:`Store` protocol and its SQLite, PostgreSQL and memory backends.

``open_store()`` picks the backend from a URL or path:

- ``None``: the ``LOCKGATE_STORE`` environment variable, else ``.lockgate/lockgate.db`` under the
  current directory (SQLite);
- ``"memory"``, ``"memory://"`` or ``":memory:"``: a fresh :class:`MemoryStore`;
- ``"postgresql://..."`` / ``"postgres://..."``: a :class:`PostgresStore` (needs psycopg 3);
- ``"sqlite:///abs/path.db"``, ``"sqlite://rel/path.db"`` or any other string or path: SQLite.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lockgate.engine.store.base import PROBLEMS, Event, RunSummary, Store, StoredRun, VerifyReport
from lockgate.engine.store.memory import MemoryStore
from lockgate.engine.store.sqlite import DEFAULT_PATH, SQLiteStore
from lockgate.errors import StoreError

__all__ = [
    "PROBLEMS", "Event", "MemoryStore", "RunSummary", "SQLiteStore", "Store", "StoredRun",
    "VerifyReport", "mistyped_url", "open_store", "sqlite_file",
]

ENV_VAR = "LOCKGATE_STORE"

#: A store scheme followed by a colon but not by ``//`` (``postgresql:/host/db``, ``sqlite:x.db``):
#: a typo, which would otherwise name a SQLite file in a folder called ``postgresql:``
_MISTYPED = re.compile(r"(postgresql|postgres|sqlite|memory):(?!//)", re.IGNORECASE)
_FORMS = {"postgresql": "postgresql://USER:PASSWORD@HOST[:PORT]/DATABASE",
          "postgres": "postgres://USER:PASSWORD@HOST[:PORT]/DATABASE",
          "sqlite": "sqlite:///ABSOLUTE/PATH.db or sqlite://RELATIVE/PATH.db", "memory": "memory://"}


def open_store(url_or_path: str | os.PathLike[str] | None = None, **options: Any) -> Store:
    """Open the store named by ``url_or_path`` (see the module docstring); ``options`` go to the
    backend's constructor (e.g. ``schema=`` for PostgreSQL, ``synchronous=`` for SQLite)."""
    target = url_or_path if url_or_path is not None else os.environ.get(ENV_VAR) or None
    if target is None:
        return SQLiteStore(Path.cwd() / DEFAULT_PATH, **options)
    if isinstance(target, os.PathLike):
        return SQLiteStore(target, **options)
    if not isinstance(target, str) or not target.strip():
        raise StoreError(f"a store is named by a URL or a path, not {target!r}")
    if target in {"memory", "memory://", ":memory:"}:
        return MemoryStore()
    if mistyped_url(target):
        scheme = target.split(":", 1)[0]
        raise StoreError(f"the store {scheme}:... is not a valid URL: its scheme needs two slashes, as in "
                         f"{_FORMS[scheme.lower()]}; nothing was opened")
    if target.startswith(("postgresql://", "postgres://")):
        from lockgate.engine.store.postgres import PostgresStore

        return PostgresStore(target, **options)
    if target.startswith("sqlite://"):
        target = target.removeprefix("sqlite://")
    elif "://" in target:
        scheme = target.split("://", 1)[0]  # not the rest: it may hold a password
        raise StoreError(f"unknown store URL scheme {scheme!r}:// (schemes are lowercase: sqlite://, postgresql://, "
                         "postgres:// or memory)")
    return SQLiteStore(sqlite_file(target), **options)


def mistyped_url(target: str) -> bool:
    """Whether ``target`` starts like a store URL with its ``//`` missing or cut (a typo)."""
    return _MISTYPED.match(target) is not None


def sqlite_file(path: str) -> Path:
    """The SQLite file ``path`` names, ``~`` and ``~user`` expanded as a shell would (a store
    named in a config file, such as an MCP host's, was never seen by one)."""
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:  # an unknown user, or no home folder to be found
        raise StoreError(f"cannot find the folder {path.split('/', 1)[0]!r} names in the store path {path!r}: "
                         f"{exc}") from exc
