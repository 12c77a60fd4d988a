"""Opening a SQLite store only reads it unless its schema must be created or upgraded (review
s11, finding 2): another process holding an ordinary write transaction (``BEGIN IMMEDIATE``, as
a ``sqlite3`` shell left in one does) no longer blocks a store that only reads, since a WAL reader
never waits for a writer; an upgrade still takes the write lock. And an empty store file beside
a write-ahead log with transactions in it (a truncated store) is refused, not turned into a new
store while SQLite deletes the log (finding 5)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_store_sqlite_migrate import V1_SCHEMA, _write_v1_run

from lockgate.engine.store import SQLiteStore
from lockgate.engine.store.sqlite_schema import SCHEMA_VERSION
from lockgate.errors import StoreError, StoreUnavailable

# Holds a write transaction on the database named by argv[1] until its stdin is closed.
HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
"""


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another process holds a write transaction on ``path`` while inside."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def _store_with_a_run(path: Path) -> None:
    store = SQLiteStore(path)
    store.create_run("r1", {"status": "running", "flow": "main"}, {"a": {"status": "pending"}},
                     [{"type": "planned", "step_id": None, "detail": {}}])
    store.close()


def test_a_store_opens_and_reads_while_another_process_holds_a_write_transaction(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _store_with_a_run(path)
    with write_locked(path):
        store = SQLiteStore(path, busy_timeout=1.0)  # waiting for the lock would fail after 1 s
        try:
            assert [run.run_id for run in store.list_runs()] == ["r1"]
            assert store.load_run("r1").steps == {"a": {"status": "pending"}}
            assert store.verify("r1").ok
        finally:
            store.close()


def test_an_upgrade_on_opening_still_takes_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")  # as a store is: only the schema needs the write lock
        db.executescript(V1_SCHEMA)
        _write_v1_run(db, "old", "running", 3)
    db.close()
    with write_locked(path), pytest.raises(StoreUnavailable, match="database is locked"):
        SQLiteStore(path, busy_timeout=0.1)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    db.close()
    store = SQLiteStore(path)
    try:
        assert store.verify("old").ok
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    db.close()


def test_an_empty_store_file_beside_a_write_ahead_log_is_refused_and_both_are_left_alone(tmp_path: Path) -> None:
    live = tmp_path / "live.db"
    store = SQLiteStore(live)  # open: its last transactions are still in live.db-wal
    store.create_run("r1", {"status": "running", "flow": "main"}, {}, [{"type": "planned", "detail": {}}])
    log = Path(f"{live}-wal").read_bytes()
    store.close()
    assert log
    truncated = tmp_path / "truncated.db"
    truncated.touch()
    Path(f"{truncated}-wal").write_bytes(log)
    with pytest.raises(StoreError, match=r"truncated\.db is empty \(0 bytes\) but its write-ahead log .*"
                                         r"truncated\.db-wal holds transactions: the store was truncated"):
        SQLiteStore(truncated)
    assert truncated.stat().st_size == 0
    assert Path(f"{truncated}-wal").read_bytes() == log


def test_an_empty_file_alone_is_still_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "made_by_mktemp"
    path.touch()
    Path(f"{path}-wal").touch()  # an empty log holds nothing to lose
    store = SQLiteStore(path)
    try:
        assert store.list_runs() == []
    finally:
        store.close()
