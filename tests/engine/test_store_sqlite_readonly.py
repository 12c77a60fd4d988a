"""A SQLite store that may not be written (its file or its folder made read-only, as a store
copied off a CI artifact often is) is opened read-only: every read works and changes nothing,
and a write is refused saying the store is read-only. Permission bits count even for root
(who could write anyway), so these hold when the tests run as root, as in CI; a read-only file
system counts for everyone."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_store_sqlite_migrate import V1_SCHEMA

from lockgate.engine.store import SQLiteStore
from lockgate.errors import ReadOnlyStore, StoreError, StoreUnavailable

HEADER = {"status": "running", "flow": "main"}
AT = "2025-03-01T12:00:00+00:00"


def event(i: int) -> dict:
    return {"type": "t", "detail": {"i": i}, "at": AT}


def a_store(path: Path) -> None:
    """Run ``r`` (version 2, three events) in a closed store: only the database file is left."""
    store = SQLiteStore(path)
    store.create_run("r", HEADER, {"x": {"n": 1}}, [event(1)])
    store.save_run("r", expected_version=1, header=HEADER, steps={"x": {"n": 2}}, events=[event(2), event(3)])
    store.close()


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """``paths`` without write permission for anyone while inside (restored after, so the test
    folder can be removed)."""
    modes = [path.stat().st_mode for path in paths]
    try:
        for path in paths:
            path.chmod(path.stat().st_mode & ~0o222)
        yield
    finally:
        for path, mode in zip(paths, modes, strict=True):
            path.chmod(mode)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reads_and_refuses_writes(path: Path, reason: str) -> None:
    store = SQLiteStore(path)
    assert [summary.run_id for summary in store.list_runs()] == ["r"]
    assert store.load_run("r").steps == {"x": {"n": 2}} and store.current_version("r") == 2
    assert [e.seq for e in store.events("r")] == [1, 2, 3] and store.verify("r").ok
    with pytest.raises(StoreError, match=rf"the store {path} is read-only \({reason}\): nothing was written") as caught:
        store.save_run("r", expected_version=2, header=HEADER, steps={}, events=[event(4)])
    assert isinstance(caught.value, ReadOnlyStore) and not isinstance(caught.value, StoreUnavailable)
    with pytest.raises(StoreError, match="is read-only"):
        store.create_run("new", HEADER, {}, [])
    store.close()


def test_a_store_file_without_write_permission_is_read_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    a_store(path)
    before = digest(path)
    with read_only(path):
        reads_and_refuses_writes(path, f"the file {path} is not writable")
    assert digest(path) == before


def test_a_store_in_a_read_only_folder_is_read_without_creating_anything_there(tmp_path: Path) -> None:
    folder = tmp_path / "artifact"
    folder.mkdir()
    path = folder / "s.db"
    a_store(path)
    before = digest(path)
    with read_only(folder):
        reads_and_refuses_writes(path, f"its folder {folder} is not writable")
        assert sorted(p.name for p in folder.iterdir()) == ["s.db"]  # no -wal, no -shm
    assert digest(path) == before


def test_a_read_only_store_whose_log_holds_transactions_it_cannot_read_is_refused_clearly(tmp_path: Path) -> None:
    live, folder = tmp_path / "live.db", tmp_path / "artifact"
    folder.mkdir()
    store = SQLiteStore(live)
    store.create_run("r", HEADER, {}, [event(1)])  # in the write-ahead log, not yet in the file
    for suffix in ("", "-wal"):  # copied while open, without its -shm
        shutil.copy(f"{live}{suffix}", folder / f"s.db{suffix}")
    store.close()
    path = folder / "s.db"
    with read_only(folder), pytest.raises(StoreError) as caught:
        SQLiteStore(path)
    message = str(caught.value)
    assert message.startswith(f"cannot read the SQLite store {path}: its write-ahead log {path}-wal holds ")
    assert "copy the store with its -wal file to a writable folder" in message
    assert sorted(p.name for p in folder.iterdir()) == ["s.db", "s.db-wal"]


def test_a_read_only_file_that_is_no_store_yet_is_refused_clearly(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with read_only(empty), pytest.raises(StoreError, match=f"{empty} is read-only and holds no Lockgate run store"):
        SQLiteStore(empty)
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as db:
        db.executescript(V1_SCHEMA)
    db.close()
    with read_only(old), pytest.raises(StoreError, match=f"{old} has schema version 1, .* the file is read-only"):
        SQLiteStore(old)
