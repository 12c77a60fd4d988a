"""A damaged store is refused, not repaired at the cost of its audit trail: a save whose events'
numbers are already taken by the run's stored events (its event count lowered, e.g. the runs
table restored from an older backup) writes nothing on every durable backend, and a step record
deleted by hand makes every load a StoreError naming it (review s8-r6 #1, #5)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import Backend

from lockgate.engine.store import SQLiteStore
from lockgate.errors import StoreError

HEADER = {"status": "running", "flow": "main"}
AT = "2025-03-01T12:00:00+00:00"


def event(i: int) -> dict:
    return {"type": "t", "detail": {"i": i}, "at": AT}


def test_a_save_over_stored_events_is_refused_and_keeps_them(durable_backend: Backend) -> None:
    store = durable_backend.open()
    store.create_run("r", HEADER, {"x": {"n": 1}}, [event(1), event(2)])
    store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(3)])
    durable_backend.raw("UPDATE {runs} SET event_count = event_count - 1 WHERE run_id = 'r'")
    before = [e.hash for e in store.events("r")]
    fresh = durable_backend.open()
    with pytest.raises(StoreError, match=r"stored event count \(2\) is behind its events.*restored from a backup"):
        fresh.save_run("r", expected_version=2, header=HEADER, steps={"x": {"n": 2}}, events=[event(9)])
    assert [e.hash for e in fresh.events("r")] == before
    assert fresh.load_run("r").steps == {"x": {"n": 1}} and fresh.current_version("r") == 2
    report = fresh.verify("r")
    assert not report.ok and report.first_bad_seq == 3


def test_a_save_meeting_a_hand_inserted_row_after_its_own_still_moves_it_aside(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.create_run("r", HEADER, {}, [event(1)])
    (key,) = sqlite3.connect(path).execute("SELECT id << 32 FROM runs").fetchone()
    with sqlite3.connect(path) as db:  # a stranger where the save's second event goes
        db.execute("INSERT INTO events (id, run_id, seq, at, type, detail, prev_hash, hash)"
                   " VALUES (?, 'r', 3, ?, 't', '{}', 'p', 'h')", (key + 3, AT))
    store.save_run("r", expected_version=1, header=HEADER, steps={}, events=[event(2), event(3), event(4)])
    assert [e.seq for e in store.events("r")] == [1, 2, 3, 3, 4]
    report = store.verify("r")
    assert (report.ok, report.first_bad_seq, report.problem) == (False, 4, "inserted")
