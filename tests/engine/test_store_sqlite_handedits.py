"""A SQLite store file edited by hand (tampering, a stray row, a deleted run) keeps every other
run working: a row found where a save's events go moves aside and is still reported, a run reads
only its own rows from its key range, and a deleted run's id is not given out again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_store_sqlite_migrate import _events, v1_file  # noqa: F401  (v1_file is a fixture)

from lockgate.engine.store import SQLiteStore
from lockgate.engine.store.chain import chain_events
from lockgate.errors import StoreError

HEADER = {"status": "running", "flow": "main"}
AT = "2025-03-01T12:00:00+00:00"


def event(i: int) -> dict:
    return {"type": "t", "detail": {"i": i}, "at": AT}


def edit(path: Path, sql: str, params: tuple = ()) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)
    db.close()


def test_a_hand_inserted_event_is_reported_and_blocks_no_other_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    for run in ("a", "b"):
        store.create_run(run, HEADER, {"x": {"n": 1}}, [event(1), event(2)])
    (forged,) = chain_events("a", [event(3)], "0" * 64, 3, AT)
    edit(path, "INSERT INTO events (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
               " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", ("a", *forged))
    assert store.save_run("b", expected_version=1, header=HEADER, steps={}, events=[event(3)]) == 2
    report = store.verify("a")
    assert not report.ok and report.first_bad_seq == 3
    assert store.verify("b").ok and len(store.events("b")) == 3


def test_a_hand_inserted_step_row_takes_no_new_step_of_another_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    for run in ("a", "b"):
        store.create_run(run, HEADER, {"s": {"n": 1}}, [])
    edit(path, "INSERT INTO steps (run_id, step_id, record) VALUES ('a', 'fix', '{\"n\":7}')")
    store.save_run("b", expected_version=1, header=HEADER, steps={"new": {"n": 2}}, events=[])
    assert store.load_run("b").steps == {"s": {"n": 1}, "new": {"n": 2}}
    assert SQLiteStore(path).load_run("b").steps == {"s": {"n": 1}, "new": {"n": 2}}
    assert store.load_run("a").steps == {"s": {"n": 1}}


def test_stray_events_of_an_upgraded_file_leave_the_newest_run_writable(v1_file: Path) -> None:  # noqa: F811
    edit(v1_file, "UPDATE events SET seq = 0 WHERE run_id = 'older' AND seq = 2")
    store = SQLiteStore(v1_file)
    version = store.load_run("newer").version
    assert store.save_run("newer", expected_version=version, header=HEADER, steps={}, events=_events(1)[:1])
    assert store.verify("newer").ok
    assert not store.verify("older").ok


def test_a_version_1_file_whose_run_ids_cannot_be_keys_is_refused_unchanged(v1_file: Path) -> None:  # noqa: F811
    edit(v1_file, "UPDATE runs SET id = 3000000000 WHERE run_id = 'newer'")
    with pytest.raises(StoreError, match="cannot upgrade to schema 2"):
        SQLiteStore(v1_file)
    with sqlite3.connect(v1_file) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    db.close()


def test_a_run_row_deleted_by_hand_does_not_hand_its_rows_to_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.create_run("old", HEADER, {"secret": {"n": 1}, "s2": {"n": 2}}, [event(1), event(2)])
    edit(path, "DELETE FROM runs WHERE run_id = 'old'")
    fresh = SQLiteStore(path)
    fresh.create_run("fresh", HEADER, {"mine": {"n": 9}}, [event(1)])
    assert fresh.load_run("fresh").steps == {"mine": {"n": 9}}
    assert fresh.save_run("fresh", expected_version=1, header=HEADER, steps={"more": {"n": 3}}, events=[event(2)]) == 2
    assert fresh.verify("fresh").ok and [e.seq for e in fresh.events("fresh")] == [1, 2]


def test_a_row_inserted_by_hand_where_the_next_events_go_moves_aside(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.create_run("a", HEADER, {}, [event(1)])
    store.create_run("b", HEADER, {}, [event(1)])
    # without an id SQLite gives the row max(id) + 1: b's next event, the second of this save
    (forged,) = chain_events("a", [event(2)], "0" * 64, 2, AT)
    edit(path, "INSERT INTO events (id, run_id, seq, at, type, step_id, detail, prev_hash, hash)"
               " VALUES ((SELECT max(id) + 2 FROM events), ?, ?, ?, ?, ?, ?, ?, ?)", ("a", *forged))
    assert store.save_run("b", expected_version=1, header=HEADER, steps={}, events=[event(2), event(3)]) == 2
    assert [e.seq for e in store.events("b")] == [1, 2, 3] and store.verify("b").ok
    assert store.verify("a").first_bad_seq == 2  # the forged row is still there, and still reported


def test_text_edited_into_something_not_json_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.create_run("a", HEADER, {"x": {"n": 1}}, [event(1), event(2)])
    edit(path, "UPDATE events SET detail = 'not json' WHERE run_id = 'a' AND seq = 2")
    with pytest.raises(StoreError, match="the detail of event 2 in the store is not valid JSON"):
        store.events("a")
    report = store.verify("a")
    assert not report.ok and report.first_bad_seq == 2 and report.problem == "edited"
    edit(path, "UPDATE steps SET record = '{broken' WHERE step_id = 'x'")
    fresh = SQLiteStore(path)
    with pytest.raises(StoreError, match="the record of step 'x' in the store is not valid JSON"):
        fresh.load_run("a")
    fresh.close()
    store.close()
