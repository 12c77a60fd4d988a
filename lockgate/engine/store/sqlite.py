"""The embedded default :class:`~lockgate.engine.store.base.Store`: one SQLite file in WAL mode.

Durability. The database runs with ``journal_mode=WAL`` and ``synchronous=NORMAL``: a commit
appends the transaction to the write-ahead log and returns without an fsync; the log is fsynced
when it is checkpointed into the database. This is still crash-safe for a *process* crash
(SIGKILL, an exception, the OOM killer): a committed transaction is in the log in the operating
system's page cache and is replayed when the file is next opened, and an uncommitted one is
discarded, so every reopen sees exactly the committed versions. After a *power loss or kernel
crash* the last transactions before the failure may be rolled back, but the database is never
corrupted. Pass ``synchronous="FULL"`` to fsync at every commit when that matters more than the
per-transition cost.

Concurrency. One connection per store object, used under a lock (so a store may be shared by
threads). Writers take the database lock up front with ``BEGIN IMMEDIATE`` and wait for it up to
``busy_timeout``; the run version is checked by ``UPDATE runs ... WHERE run_id=? AND version=?``,
so of two processes saving the same version exactly one wins and the other gets
:class:`ConcurrencyConflict` with nothing written. Opening a store only reads it (so never waits
for a writer) unless its schema must be created or upgraded.

Cost. ``save_run`` is one transaction of at most four prepared statements. The chain head of a
version is fixed once that version is committed, so the head read by the last load or save of
the run is cached per (run, version) and the usual transition needs no read at all (the UPDATE
also matches the cached head, so a database swapped underneath cannot fork the chain). The
cached row also tells whether the status changed: when it did not, the UPDATE leaves the status
column, and so its index, alone. Most of a transition's time is the commit, which writes every
page the transaction touched to the log; the layout (:mod:`~lockgate.engine.store.sqlite_schema`)
keeps that to the run's row, the step record's page and the page the events append to. The
cached head also holds the run's step slots (step id -> row id), valid for the cached version.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar

from lockgate.engine import lockdir
from lockgate.engine.store import codec, sqlite_open
from lockgate.engine.store.base import Event, RunSummary, StoredRun, VerifyReport
from lockgate.engine.store.chain import (
    GENESIS_HASH,
    Link,
    chain_events,
    head_hash,
    refuse_undecodable,
    stored_event,
    verify_chain,
)
from lockgate.engine.store.sqlite_schema import (
    KEY_SHIFT,
    LOW_MASK,
    RECORD_ROOM,
    SCHEMA_VERSION,
    STRAY,
    check_readable,
    is_current,
    prepare,
    run_key,
)
from lockgate.errors import NotAStore, ReadOnlyStore, StoreError, StoreUnavailable

__all__ = ["DEFAULT_PATH", "SCHEMA_VERSION", "SQLiteStore"]

#: ``wait_for_change`` polls ``current_version``: first after this many seconds, doubling up to
#: ``_POLL_MAX``. SQLite has no cross-process notification; a version read costs a few µs.
_POLL_MIN, _POLL_MAX = 0.0005, 0.05

#: ``wal_autocheckpoint`` with ``synchronous=NORMAL``: the log is copied into the database file
#: (and both fsynced) by the commit that takes it past this many pages. SQLite's default, 1,000,
#: costs ~3 ms every ~300 transitions; at 10,000 the copy writes each page once for more of its
#: updates (the run's row is rewritten by every commit) and the fsyncs come a tenth as often:
#: 4-10 µs less per transition, for a log of up to ~40 MB beside the database while it is open.
#: With ``FULL`` every commit fsyncs the log, and a log that keeps growing makes each fsync
#: dearer (~50 µs a transition here) than the checkpoints it saves: that mode keeps the default.
_CHECKPOINT_PAGES = 10_000

#: SQLite's primary result codes for a store that cannot be used *right now* but is not damaged:
#: another connection held the lock past the busy timeout, the disk failed or filled up, memory
#: ran out (see :class:`~lockgate.errors.StoreUnavailable`).
_UNAVAILABLE = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
                          sqlite3.SQLITE_NOMEM})

# A new run's row id is above every run's, and above the key of every event the store wrote: a
# run row deleted by hand leaves its events behind, and its id must not be given out again.
_INSERT_RUN = (
    "INSERT INTO runs (id, run_id, flow, status, header, version, created_at, updated_at, event_count, head_hash)"
    " VALUES (1 + max(coalesce((SELECT max(id) FROM runs), 0),"
    f" coalesce((SELECT id >> {KEY_SHIFT} FROM events WHERE owner IS NOT NULL AND id > 0"
    " ORDER BY id DESC LIMIT 1), 0)), ?, ?, ?, ?, 1, ?, ?, ?, ?)"
)
# Rows in the ids a save is about to write that the store did not write there (inserted by hand
# without an id, SQLite gave them max(id) + 1: the newest run's next event) move to a negative
# id, outside every run's key range; they stay findable as stray rows (see sqlite_schema).
_MOVE_STRANGERS = (
    "UPDATE events SET id = -(1 + (random() & 4611686018427387903))"
    " WHERE id BETWEEN ? AND ? AND owner IS NOT run_id"
)
_SELECT_OWN_HASHES = "SELECT id, hash FROM events WHERE id BETWEEN ? AND ? AND owner IS run_id"
_UPDATE_RUN = (
    "UPDATE runs SET flow = ?, status = ?, header = ?, version = version + 1, updated_at = ?,"
    " event_count = ?, head_hash = ? WHERE run_id = ? AND version = ? AND head_hash = ?"
)
# The usual transition keeps status and flow: not naming them leaves the status index untouched
# (one page less to write per commit).
_UPDATE_RUN_BODY = (
    "UPDATE runs SET header = ?, version = version + 1, updated_at = ?,"
    " event_count = ?, head_hash = ? WHERE run_id = ? AND version = ? AND head_hash = ?"
)
# The last parameter is the record's slack in bytes (see sqlite_schema.RECORD_ROOM), worked out in
# Python: SQLite's length() would scan the text to count its characters.
_UPSERT_STEP = (
    "INSERT INTO steps (id, run_id, step_id, record, slack) VALUES (?, ?, ?, ?, zeroblob(?))"
    " ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, step_id = excluded.step_id,"
    " record = excluded.record, slack = excluded.slack"
)
_INSERT_EVENT = (
    "INSERT INTO events (id, run_id, seq, at, type, step_id, detail, prev_hash, hash, owner)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_HEAD = "SELECT version, event_count, head_hash, status, flow, id FROM runs WHERE run_id = ?"
# Every row in a run's key range: the run's own (by run_id) are its records; a row naming another
# run (edited by hand) is not, but its id is taken, so new slots go above every row in the range.
_SELECT_RANGE = "SELECT step_id, id, run_id, record FROM steps WHERE id > ? AND id <= ?"
_SELECT_SLOTS = "SELECT step_id, id, run_id, NULL FROM steps WHERE id > ? AND id <= ?"
_EVENT_COLUMNS = "seq, at, type, step_id, detail, prev_hash, hash"
# A run's events as the store wrote them (its key range), then any stray rows naming it (see
# sqlite_schema): parameters run_id, the id to read after, the run's last possible id, since_seq.
_SELECT_EVENTS = (
    f"SELECT {_EVENT_COLUMNS} FROM events WHERE id > ?2 AND id <= ?3 AND run_id = ?1 AND NOT {STRAY}"
    f" UNION ALL SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ?1 AND seq > ?4 AND {STRAY}"
    " ORDER BY seq"
)

DEFAULT_PATH = Path(".lockgate") / "lockgate.db"

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _fresh(read: Callable[Concatenate[SQLiteStore, _P], _T]) -> Callable[Concatenate[SQLiteStore, _P], _T]:
    """The store's read method ``read``, made through :meth:`SQLiteStore._through_view` when the
    store is an ``immutable`` view; as it is otherwise."""
    @functools.wraps(read)
    def fresh(store: SQLiteStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if store._view is None:
            return read(store, *args, **kwargs)
        return store._through_view(functools.partial(read, store, *args, **kwargs))
    return fresh


class SQLiteStore:
    """A store in one SQLite database file (created with its schema when missing)."""

    def __init__(self, path: str | os.PathLike[str] = DEFAULT_PATH, *, synchronous: str = "NORMAL",
                 busy_timeout: float = 10.0) -> None:
        if not isinstance(synchronous, str) or synchronous.upper() not in {"NORMAL", "FULL"}:
            raise StoreError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.path = Path(path)
        self._lock = threading.RLock()
        # run id -> its row as last seen committed by this store.
        self._heads: dict[str, _Head] = {}
        file = sqlite_open.target(self.path)
        sqlite_open.refuse_lost_log(file)
        #: why the file is only read (see _read_only), None when it is written as usual
        self.read_only = sqlite_open.read_only_reason(file)
        self._busy_timeout = busy_timeout
        #: set while _db is an ``immutable`` view, which SQLite never checks for changes (see
        #: _through_view); None for a connection SQLite keeps current itself
        self._view: sqlite_open.View | None = None
        try:
            if self.read_only:
                self._db, self._view = sqlite_open.open_read_only(file, busy_timeout)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if self.path.parent.name == lockdir.NAME:
                    lockdir.keep_out_of_git(self.path.parent)
                self._db = sqlite_open.connect(self.path, busy_timeout)
        except (sqlite3.Error, OSError) as exc:
            raise self._failure(exc, "cannot open SQLite store") from exc
        def set_up() -> None:
            _refuse_foreign(self._db, self.path)  # before anything is written to the file
            if self.read_only:
                check_readable(self._db, self.path)
            else:
                self._prepare(synchronous.upper(), busy_timeout)

        self._set_up(self._db, set_up)

    def _set_up(self, db: sqlite3.Connection, set_up: Callable[[], None]) -> None:
        """``set_up()`` a connection just opened; on any failure it is closed, and SQLite's own
        error reported as the store's."""
        try:
            set_up()
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise self._failure(exc, "cannot open SQLite store") from exc
            raise

    def _prepare(self, synchronous: str, busy_timeout: float) -> None:
        """Set up a connection that writes: WAL mode, durability, the schema."""
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        if synchronous == "NORMAL":
            self._db.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
        self._create_schema()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- writes ---------------------------------------------------------------------------------

    def create_run(
        self, run_id: str, header: dict[str, Any], steps: dict[str, dict[str, Any]], events: list[dict[str, Any]]
    ) -> int:
        codec.check_run_id(run_id)
        header_json, status, flow, encoded_steps, now = codec.encode_write(header, steps)
        links = chain_events(run_id, events, GENESIS_HASH, 1, now)
        head = head_hash(links)
        with self._write() as db:
            try:
                cursor = db.execute(_INSERT_RUN, (run_id, flow, status, header_json, now, now, len(links), head))
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"run {run_id!r} already exists") from exc
            key = run_key(cursor.lastrowid)
            slots = self._write_rows(db, run_id, key, {}, key, encoded_steps, links)
        self._heads[run_id] = _Head(1, len(links), head, status, flow, key, slots, max(slots.values(), default=key))
        return 1

    def save_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        header: dict[str, Any],
        steps: dict[str, dict[str, Any]],
        events: list[dict[str, Any]],
    ) -> int:
        codec.check_run_id(run_id, existing=True)
        codec.check_version(expected_version)
        header_json, status, flow, encoded_steps, now = codec.encode_write(header, steps)
        with self._write() as db:
            old = self._head_at(db, run_id, expected_version)
            links = chain_events(run_id, events, old.hash, old.count + 1, now)
            new_count = old.count + len(links)
            new_head = head_hash(links, old.hash)
            if status == old.status and flow == old.flow:
                cursor = db.execute(_UPDATE_RUN_BODY, (header_json, now, new_count, new_head, run_id,
                                                       expected_version, old.hash))
            else:
                cursor = db.execute(_UPDATE_RUN, (flow, status, header_json, now, new_count, new_head, run_id,
                                                  expected_version, old.hash))
            if cursor.rowcount != 1:
                raise self._conflict(db, run_id, expected_version)
            new = self._write_rows(db, run_id, old.key, old.slots, old.top, encoded_steps, links)
        top = old.top
        if new:
            old.slots.update(new)
            top = max(new.values())
        self._heads[run_id] = _Head(expected_version + 1, new_count, new_head, status, flow, old.key, old.slots, top)
        return expected_version + 1

    def _head_at(self, db: sqlite3.Connection, run_id: str, version: int) -> _Head:
        """The row of ``run_id`` at ``version``, from the cache when it holds that version (the
        UPDATE's version check then proves it current), else read with its step slots."""
        cached = self._heads.get(run_id)
        if cached is not None and cached.version == version:
            return cached
        row = db.execute(_SELECT_HEAD, (run_id,)).fetchone()
        if row is None:
            raise codec.not_found(run_id, self.path)
        if row[0] != version:
            raise codec.conflict(run_id, version, row[0])
        key = run_key(row[5])
        slots, top, _ = _own_steps(db.execute(_SELECT_SLOTS, (key, key | LOW_MASK)), run_id, key)
        return _Head(*row[:5], key, slots, top)

    def _conflict(self, db: sqlite3.Connection, run_id: str, expected: int) -> Exception:
        self._heads.pop(run_id, None)
        row = db.execute(_SELECT_HEAD, (run_id,)).fetchone()
        if row is None:
            return codec.not_found(run_id, self.path)
        return codec.conflict(run_id, expected, row[0])

    @staticmethod
    def _write_rows(
        db: sqlite3.Connection, run_id: str, key: int, slots: dict[str, int], top: int,
        steps: list[tuple[str, str]], links: list[Link],
    ) -> dict[str, int]:
        """Upsert the step records and append the events; return the steps new to the run with
        the ids they took (the run's next slots, above ``top``), for the caller to add to its
        ``slots`` once the transaction has committed."""
        new: dict[str, int] = {}
        if steps:
            rows = []
            for step_id, record in steps:
                slot = slots.get(step_id)
                if slot is None:
                    slot = new[step_id] = top = top + 1
                rows.append((slot, run_id, step_id, record, max(0, RECORD_ROOM - len(record))))
            if len(rows) == 1:
                db.execute(_UPSERT_STEP, rows[0])
            else:
                # Updates before appends: a record that grows while it is not the last one on
                # its page makes SQLite redistribute cells over three pages.
                rows.sort()
                db.executemany(_UPSERT_STEP, rows)
        if links:
            rows = [(key + link[0], run_id, *link, run_id) for link in links]
            try:
                db.executemany(_INSERT_EVENT, rows)
            except sqlite3.IntegrityError:  # a row holds one of the ids
                span = (rows[0][0], rows[-1][0])
                _refuse_own_events(db, run_id, rows)
                db.execute("DELETE FROM events WHERE id BETWEEN ? AND ? AND owner IS run_id", span)  # this save's
                db.execute(_MOVE_STRANGERS, span)
                db.executemany(_INSERT_EVENT, rows)
        return new

    # -- reads ----------------------------------------------------------------------------------

    @_fresh
    def load_run(self, run_id: str) -> StoredRun:
        codec.check_run_id(run_id, existing=True)
        with self._read() as db:
            row = db.execute(
                "SELECT header, version, event_count, head_hash, status, flow, id FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise codec.not_found(run_id, self.path)
            key = run_key(row[6])
            slots, top, records = _own_steps(db.execute(_SELECT_RANGE, (key, key | LOW_MASK)), run_id, key)
        header_json, version = row[0], row[1]
        self._heads[run_id] = _Head(*row[1:6], key, slots, top)
        return StoredRun(
            run_id=run_id,
            header=codec.decode(header_json, f"the header of run {run_id!r}"),
            steps={step_id: codec.decode(record, "the record of step {!r}", step_id)
                   for step_id, record in records.items()},
            version=version,
        )

    @_fresh
    def current_version(self, run_id: str) -> int:
        codec.check_run_id(run_id, existing=True)
        with self._lock:
            row = self._execute("SELECT version FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise codec.not_found(run_id, self.path)
        return row[0]

    @_fresh
    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunSummary]:
        codec.check_listing(status, limit)
        columns = "run_id, flow, status, created_at, updated_at, version"
        with self._lock:
            if status is None:
                rows = self._execute(f"SELECT {columns} FROM runs ORDER BY id DESC LIMIT ?", (limit,))
            else:
                rows = self._execute(
                    f"SELECT {columns} FROM runs WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit)
                )
            return [RunSummary(*row) for row in rows.fetchall()]

    @_fresh
    def events(self, run_id: str, since_seq: int = 0) -> list[Event]:
        codec.check_run_id(run_id, existing=True)
        codec.check_seq(since_seq)
        with self._read() as db:
            key = self._run_key(db, run_id)
            params = (run_id, key + min(since_seq, LOW_MASK), key | LOW_MASK, since_seq)
            rows, lenient = _read_lenient(db, lambda: db.execute(_SELECT_EVENTS, params).fetchall())
            if lenient:
                refuse_undecodable(run_id, rows)
        return [stored_event(row) for row in rows]

    @_fresh
    def verify(self, run_id: str) -> VerifyReport:
        codec.check_run_id(run_id, existing=True)
        with self._read() as db:  # text that is not UTF-8 is read leniently: verify_chain names it
            (row, links), _ = _read_lenient(db, lambda: self._chain(db, run_id))
        return verify_chain(run_id, links, row[1], row[0])

    def _chain(self, db: sqlite3.Connection, run_id: str) -> tuple[tuple[Any, ...], list[Link]]:
        """The run's (event count, head hash, row id) and its events as links, for verify."""
        row = db.execute("SELECT event_count, head_hash, id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise codec.not_found(run_id, self.path)
        key = run_key(row[2])
        return row, [Link(*link) for link in db.execute(_SELECT_EVENTS, (run_id, key, key | LOW_MASK, 0))]

    def wait_for_change(self, run_id: str, version: int, timeout: float) -> int:
        """Poll :meth:`current_version` (every 0.5 ms at first, backing off to 50 ms) until it
        differs from ``version`` or ``timeout`` seconds pass."""
        codec.check_run_id(run_id, existing=True)
        deadline = time.monotonic() + codec.check_wait(version, timeout)
        interval = _POLL_MIN
        while True:
            current = self.current_version(run_id)
            remaining = deadline - time.monotonic()
            if current != version or remaining <= 0:
                return current
            time.sleep(min(interval, remaining))
            interval = min(interval * 2, _POLL_MAX)

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self._view = None  # a closed store says so, and is not opened again

    # -- a read-only view SQLite does not watch -------------------------------------------------

    def _through_view(self, read: Callable[[], _T]) -> _T:
        """``read()`` through an ``immutable`` connection, which SQLite reads as a file that never
        changes: it keeps the pages it read, and takes no locks. Another process may still write
        the file through a path this one may not write (a live folder shared read-only). So the
        connection is opened again first when the file changed since it was opened, and the
        answer is kept only when the file did not change while it was read. A read the file
        changed under (a failure too: pages of two versions look like damage) is made again,
        after a pause that doubles from 0.5 ms to 50 ms, until the file holds still for one (a
        writer copying its log into the file takes a few ms) or the busy timeout has passed:
        then :class:`StoreUnavailable`."""
        failure: Exception | None = None
        deadline, pause = time.monotonic() + self._busy_timeout, _POLL_MIN
        with self._lock:
            while True:
                view = self._view
                if view is None:  # opened again through a writer's -shm file: SQLite keeps it current
                    return read()
                before = sqlite_open.file_state(view.file)
                try:
                    if before != view.state:
                        self._reopen(view.file)
                    answer = read()
                except Exception as exc:
                    if self._steady(view.file, before):
                        raise
                    failure = exc
                else:
                    if self._steady(view.file, before):
                        return answer
                if time.monotonic() >= deadline:
                    raise StoreUnavailable(f"the store {self.path} changed while it was read through a read-only view "
                                           "(no -shm file beside it): run the command again") from failure
                time.sleep(pause)
                pause = min(pause * 2, _POLL_MAX)

    def _steady(self, file: Path, before: tuple[Any, ...] | None) -> bool:
        """Whether ``file`` is still as it was ``before`` the read, or needs no watching any more
        (the view was opened again through a writer's -shm file)."""
        return self._view is None or sqlite_open.file_state(file) == before

    def _reopen(self, file: Path) -> None:
        """Open the view of ``file`` again, for a read of it as it is now. When a writer's -shm
        file has appeared beside it, the new connection reads through that one, as every reader
        of a live store does."""
        try:
            db, view = sqlite_open.open_read_only(file, self._busy_timeout)
        except (sqlite3.Error, OSError) as exc:
            raise self._failure(exc, "cannot open SQLite store") from exc
        self._set_up(db, lambda: check_readable(db, self.path))
        self._db.close()
        self._db, self._view = db, view

    # -- plumbing -------------------------------------------------------------------------------

    def _create_schema(self) -> None:
        """Create or upgrade the schema when the file needs it. A current store is only read:
        in WAL mode a reader never waits for a writer, whereas the write lock waits for any
        other process's open write transaction (a ``sqlite3`` shell left in one, a writer
        stopped with Ctrl-Z), so commands that only read must not take it to open the store."""
        with self._read() as db:
            if is_current(db, self.path):
                return
        with self._write() as db:
            prepare(db, self.path)  # checks again: another process may have done it meanwhile

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._transaction("BEGIN")

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            try:
                db.execute(begin)
            except sqlite3.ProgrammingError as exc:
                raise StoreError(f"the store {self.path} is closed") from exc
            except sqlite3.Error as exc:
                raise self._failure(exc, "cannot start a transaction on") from exc
            try:
                yield db
                db.execute("COMMIT")
            except BaseException as exc:
                if db.in_transaction:
                    _roll_back(db)
                if isinstance(exc, sqlite3.Error):
                    raise self._failure(exc, "SQLite error on") from exc
                raise

    def _execute(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except sqlite3.ProgrammingError as exc:
            raise StoreError(f"the store {self.path} is closed") from exc
        except sqlite3.Error as exc:
            raise self._failure(exc, "SQLite error on") from exc

    def _failure(self, exc: sqlite3.Error | OSError, doing: str) -> StoreError:
        """The StoreError for ``exc``, met while ``doing`` (the words before the path): one that
        waiting may cure (:class:`StoreUnavailable`: a lock held past the busy timeout, a disk
        that failed or filled up) or a refused write to a read-only store, said as such."""
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(exc, sqlite3.Error) and code is not None:
            if code & 0xFF in _UNAVAILABLE:
                return StoreUnavailable(f"{doing} {self.path}: {exc}")
            if code & 0xFF == sqlite3.SQLITE_READONLY and code != sqlite3.SQLITE_READONLY_DBMOVED:
                return ReadOnlyStore(
                    f"the store {self.path} is read-only ({self.read_only or exc}): nothing was written; commands "
                    "that only read it (lockgate runs, show, audit, verify) work; to change its runs, copy it to a "
                    "writable folder")
        return StoreError(f"{doing} {self.path}: {exc}")

    def _run_key(self, db: sqlite3.Connection, run_id: str) -> int:
        row = db.execute("SELECT id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise codec.not_found(run_id, self.path)
        return run_key(row[0])


def _refuse_own_events(db: sqlite3.Connection, run_id: str, rows: list[tuple[Any, ...]]) -> None:
    """Raise if the ids of a save's events ``rows`` hold events the store wrote for the run
    before this save: the run's stored event count is behind its events (its row was edited or
    restored from an older backup). The rows the failed insert did write are this save's own
    (the same hash at the same id) and are not a reason to refuse."""
    ours = {row[0]: row[-2] for row in rows}
    for row_id, hash_ in db.execute(_SELECT_OWN_HASHES, (rows[0][0], rows[-1][0])):
        if ours[row_id] != hash_:
            raise codec.events_behind(run_id, rows[0][2] - 1)


def _own_steps(rows: Any, run_id: str, key: int) -> tuple[dict[str, int], int, dict[str, str]]:
    """From the rows of a run's key range: its steps' slots, the highest id taken in the range
    (new slots go above it), and its records' texts (when the rows carry them)."""
    slots: dict[str, int] = {}
    records: dict[str, str] = {}
    top = key
    for step_id, slot, owner, record in rows:
        top = max(top, slot)
        if owner == run_id:
            slots[step_id] = slot
            if record is not None:
                records[step_id] = record
    return slots, top, records


class _Head(NamedTuple):
    """A run's row as this store last saw it committed: the chain head of ``version`` is fixed."""

    version: int
    count: int
    hash: str
    status: str
    flow: str
    #: ``runs.id`` as a key base (see sqlite_schema)
    key: int
    #: step id -> the id of its record row; shared by successive heads of the run and extended
    #: only after a commit that wrote new steps
    slots: dict[str, int]
    #: the highest record id in ``slots`` (``key`` when there is none)
    top: int


def _refuse_foreign(db: sqlite3.Connection, path: Path) -> None:
    """Refuse (:class:`~lockgate.errors.NotAStore`) a database with tables but no Lockgate schema
    version: some other program's. Only read: opening a store switches the file to WAL and
    creates Lockgate's tables in it."""
    tables = sorted(row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    if not tables or ("meta" in tables and _has_schema_version(db)):
        return
    shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
    raise NotAStore(f"{path} is an SQLite database but not a Lockgate run store (its tables: {shown}); nothing was "
                    "changed in it: name a Lockgate store, or a new file, with --store")


def _has_schema_version(db: sqlite3.Connection) -> bool:
    """Whether the ``meta`` table is a Lockgate store's (another program's may have one too)."""
    try:
        return db.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
    except sqlite3.OperationalError:  # no such column: not ours
        return False


def _roll_back(db: sqlite3.Connection) -> None:
    """Roll back the transaction a failure interrupted. When that fails too (the disk is gone),
    the failure that interrupted it is the one to report: SQLite rolls the transaction back
    itself when the connection is next used or closed, and a reopened file replays none of it."""
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error:
        pass


def _undecodable(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` may be Python's failure to decode a stored text as UTF-8 (SQLite keeps
    any bytes an edit of the file put there): an error of SQLite's own carries its result code.
    The read is then made again with :func:`_lenient_text`, which tells."""
    return getattr(exc, "sqlite_errorcode", None) is None


def _read_lenient(db: sqlite3.Connection, read: Callable[[], _T]) -> tuple[_T, bool]:
    """``read()``, made again with :func:`_lenient_text` when stored text is not UTF-8; and
    whether it was (the caller then names what is damaged)."""
    try:
        return read(), False
    except sqlite3.OperationalError as exc:
        if not _undecodable(exc):
            raise
        with _lenient_text(db):
            return read(), True


@contextmanager
def _lenient_text(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``db`` reading text that is not UTF-8 as lone surrogates (``surrogateescape``) instead
    of failing the whole read: to name the value an edit damaged. Text that is UTF-8 reads the
    same."""
    db.text_factory = _surrogate_escaped
    try:
        yield db
    finally:
        db.text_factory = str


def _surrogate_escaped(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")
