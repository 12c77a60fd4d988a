"""How a SQLite store file is opened: for writing, or read-only when this process may not write
it (a ``chmod a-w`` file, a read-only folder or mount: a store copied off a CI artifact), and
then, in a folder where SQLite cannot create the ``-shm`` file a reader needs, as an
``immutable`` view the store watches for writes made by others (see
``SQLiteStore._through_view`` in :mod:`lockgate.engine.store.sqlite`).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

from lockgate.errors import StoreError

#: Why a read-only connection to a WAL database could not open its ``-shm`` file (besides
#: SQLITE_CANTOPEN): it may not create it, or may not build its index in it.
_NO_WAL_INDEX = frozenset({sqlite3.SQLITE_READONLY_CANTINIT, sqlite3.SQLITE_READONLY_DIRECTORY})


def connect(target: str | Path, timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    """A connection as every store uses it: autocommit (transactions are begun explicitly), shared
    across the store's threads under its lock."""
    return sqlite3.connect(target, timeout=timeout, isolation_level=None, check_same_thread=False, uri=uri)


class View(NamedTuple):
    """A store file read through an ``immutable`` connection (see SQLiteStore._through_view)."""

    #: the file, as an absolute path: the connection is opened again by it
    file: Path
    #: what file_state said just before the connection was opened
    state: tuple[Any, ...] | None


def target(path: Path) -> Path:
    """The file SQLite opens for ``path``: the target of the link when ``path`` is a symbolic
    link, since SQLite follows it and puts the ``-wal`` and ``-shm`` files beside the target;
    else ``path`` as given, so that messages name it so."""
    return path.resolve() if path.is_symlink() else path


def refuse_lost_log(path: Path) -> None:
    """Refuse an empty store file (0 bytes) beside a write-ahead log that holds transactions:
    what is left of a store truncated by a crash or a full disk. SQLite would open the file as
    a new, empty database and delete the log, the last of its runs. An empty file alone is a
    new store (``--store "$(mktemp)"``): there is nothing in it to lose."""
    wal = Path(f"{path}-wal")
    try:
        lost = path.stat().st_size == 0 and wal.stat().st_size > 0
    except OSError:  # either file missing: nothing is lost
        return
    if lost:
        raise StoreError(f"{path} is empty (0 bytes) but its write-ahead log {wal} holds transactions: the store "
                         "was truncated; SQLite would delete that log on opening it, so nothing was opened or "
                         "changed: move both files aside to keep what is left, and name another store with --store")


def read_only_reason(path: Path) -> str | None:
    """Why the store file at ``path`` (a link's target: see target) is opened read-only, or None
    to open it for writing (a new file, or one this process may change). Permission bits count
    even for root, who could write anyway: a store made read-only on purpose (``chmod a-w``, a CI
    artifact) is left as it is. A writer also needs the folder, where SQLite creates the ``-wal``
    and ``-shm`` files."""
    if not path.is_file():
        return None
    if not _writable(path):
        return f"the file {path} is not writable"
    if not _writable(path.parent) and not all(_writable(Path(f"{path}{end}")) for end in ("-wal", "-shm")):
        return f"its folder {path.parent} is not writable"
    return None


def _writable(path: Path) -> bool:
    """Whether ``path`` exists, this process may write it, and its mode lets someone write it."""
    try:
        return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)
    except OSError:
        return False


def open_read_only(path: Path, timeout: float) -> tuple[sqlite3.Connection, View | None]:
    """A read-only connection to the existing store ``path`` (a link's target: see target), and
    the :class:`View` to watch when the connection is ``immutable`` (None otherwise).

    A reader of a WAL database needs its ``-shm`` file (the index of the write-ahead log), which
    SQLite creates beside it when missing. In a folder that may not be written, without one,
    the file is opened ``immutable`` (no locks, no log; nothing is created) when no write-ahead
    log holds transactions that are not in the file yet (no process writes it then: a writer
    keeps a ``-shm`` file); when one does, it is refused, since reading it needs a ``-shm``. A
    process may still start writing it later, through a path it may write: the caller watches
    the returned view (see SQLiteStore._through_view)."""
    uri = path.resolve().as_uri()
    if Path(f"{path}-shm").exists() or _writable(path.parent):
        db = connect(f"{uri}?mode=ro", timeout, uri=True)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db, None
        except sqlite3.OperationalError as exc:
            db.close()
            code = getattr(exc, "sqlite_errorcode", None) or 0
            if not (code & 0xFF == sqlite3.SQLITE_CANTOPEN or code in _NO_WAL_INDEX):
                raise
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(f"cannot read the SQLite store {path}: its write-ahead log {wal} holds transactions that "
                         f"are not in the file yet, and SQLite reads them only with a {path}-shm file, which "
                         f"cannot be created in {path.parent}; copy the store with its -wal file to a writable "
                         "folder and name the copy with --store")
    view = View(path.absolute(), file_state(path))  # before the connection reads anything
    return connect(f"{uri}?mode=ro&immutable=1", timeout, uri=True), view


def file_state(path: Path) -> tuple[Any, ...] | None:
    """What a write of the store file ``path`` changes (its size, its modification and change
    times; its inode when it is replaced), and whether a writer holds it open (its ``-shm``
    file is there); None when the file is gone."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, os.path.exists(f"{path}-shm")
