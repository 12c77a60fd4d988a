"""The SQLite store's keyed layout (see lockgate/engine/store/sqlite_schema.py): rows found by key
range, stray rows found by run id, step slots cached per run version."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lockgate.engine.store import SQLiteStore
from lockgate.engine.store.chain import chain_events
from lockgate.engine.store.sqlite_schema import RECORD_ROOM
from lockgate.errors import ConcurrencyConflict, StoreError

AT = "2025-03-01T12:00:00+00:00"
HEADER = {"status": "running", "flow": "main"}


def _raw(path: Path, sql: str, params: tuple = ()) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)
    db.close()


def _event(n: int) -> dict:
    return {"type": "tick", "detail": {"n": n}, "at": AT}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


@pytest.fixture
def store(path: Path) -> SQLiteStore:
    """Runs ``a`` (4 events) and ``b`` (2 events), ``b`` created last."""
    store = SQLiteStore(path)
    store.create_run("a", HEADER, {"s": {"n": 0}}, [_event(1), _event(2)])
    store.save_run("a", expected_version=1, header=HEADER, steps={}, events=[_event(3), _event(4)])
    store.create_run("b", HEADER, {}, [_event(1), _event(2)])
    yield store
    store.close()


def _verdict(store: SQLiteStore, run_id: str) -> tuple[bool, int | None, str | None]:
    report = store.verify(run_id)
    return report.ok, report.first_bad_seq, report.problem


def test_an_event_moved_to_another_run_shows_in_both(path: Path, store: SQLiteStore) -> None:
    _raw(path, "UPDATE events SET run_id = 'b' WHERE run_id = 'a' AND seq = 4")
    assert _verdict(store, "a") == (False, 4, "deleted")
    assert _verdict(store, "b") == (False, 3, "inserted")
    assert [e.seq for e in store.events("b")] == [1, 2, 4]


def test_a_hand_inserted_row_landing_in_another_runs_key_range_is_found(path: Path, store: SQLiteStore) -> None:
    last = store.events("a")[-1]
    (forged,) = chain_events("a", [_event(5)], last.hash, 5, AT)
    _raw(path, "INSERT INTO events (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
               " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ("a", *forged))
    assert _verdict(store, "a") == (False, 5, "inserted")
    assert store.verify("b").ok
    assert [e.seq for e in store.events("a", 3)] == [4, 5]


def test_events_since_a_seq_beyond_any_key_are_none(store: SQLiteStore) -> None:
    assert store.events("a", 2**40) == []


def test_step_slots_follow_writes_from_another_store(path: Path, store: SQLiteStore) -> None:
    other = SQLiteStore(path)
    assert other.load_run("a").version == 2
    other.save_run("a", expected_version=2, header=HEADER, steps={"t": {"n": 1}}, events=[])
    with pytest.raises(ConcurrencyConflict):
        store.save_run("a", expected_version=2, header=HEADER, steps={"u": {"n": 1}}, events=[])
    store.save_run("a", expected_version=3, header=HEADER, steps={"u": {"n": 2}, "t": {"n": 2}}, events=[])
    other.save_run("a", expected_version=4, header=HEADER, steps={"v": {"n": 3}, "s": {"n": 3}}, events=[])
    expected = {"s": {"n": 3}, "t": {"n": 2}, "u": {"n": 2}, "v": {"n": 3}}
    assert store.load_run("a").steps == other.load_run("a").steps == expected
    other.close()


def test_a_failed_save_leaves_no_step_slot_behind(store: SQLiteStore) -> None:
    with pytest.raises(StoreError, match="at must be"):
        store.save_run("a", expected_version=2, header=HEADER, steps={"new": {"n": 1}},
                       events=[{"type": "bad", "at": "not a time"}])
    store.save_run("a", expected_version=2, header=HEADER, steps={"other": {"n": 2}}, events=[])
    store.save_run("a", expected_version=3, header=HEADER, steps={"new": {"n": 3}}, events=[])
    assert store.load_run("a").steps == {"s": {"n": 0}, "other": {"n": 2}, "new": {"n": 3}}


def test_records_grow_past_their_room_and_shrink_again(store: SQLiteStore) -> None:
    big = {"text": "x" * (RECORD_ROOM * 20)}
    version = store.save_run("a", expected_version=2, header=HEADER, steps={"s": big, "t": {"n": 1}}, events=[])
    assert store.load_run("a").steps == {"s": big, "t": {"n": 1}}
    store.save_run("a", expected_version=version, header=HEADER, steps={"s": {"n": 2}}, events=[])
    assert store.load_run("a").steps == {"s": {"n": 2}, "t": {"n": 1}}
