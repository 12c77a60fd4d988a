"""A damaged store is refused, not repaired at the cost of its audit trail: a save whose events'
numbers are already taken by the run's stored events (its event count lowered, e.g. the runs
table restored from an older backup) writes nothing on every durable backend, and a step record
deleted by hand makes every load a StoreError naming it (review s8-r6 #1, #5)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import Backend
from specs import REVIEWED
from test_engine_dropped_late import SPEC as SUBFLOW_AND_FANOUT

from lockgate.engine import Engine
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


MISSING = "the record of step {step!r} of run {run!r} is missing from the store: the store was edited or damaged"


def _at_gate(path: Path) -> str:
    """A run of REVIEWED waiting at its gate ``review``, in a SQLite file at ``path``."""
    engine = Engine(store=SQLiteStore(path))
    first = engine.plan(REVIEWED, {"text": "t"})
    engine.step_done(first["run_id"], "work", {"result": "done"}, first["token"])
    engine.close()
    return first["run_id"]


def _delete_record(path: Path, step_id: str) -> None:
    with sqlite3.connect(path) as db:
        assert db.execute("DELETE FROM steps WHERE step_id = ?", (step_id,)).rowcount == 1
    db.close()


@pytest.mark.parametrize("step_id", ["work", "review"])
def test_a_deleted_step_record_is_a_store_error_from_every_command(tmp_path: Path, step_id: str) -> None:
    path = tmp_path / "s.db"
    run = _at_gate(path)
    _delete_record(path, step_id)
    engine = Engine(store=SQLiteStore(path))
    commands = [engine.status, engine.audit, engine.why, engine.resume,
                lambda r: engine.resolve_waiting_gate(r, "review", "approve", "ok", "test")]
    for command in commands:
        with pytest.raises(StoreError) as caught:
            command(run)
        assert str(caught.value) == MISSING.format(step=step_id, run=run)
    assert engine.verify(run)["ok"]
    engine.close()


def _fanning(path: Path) -> str:
    """A run of SUBFLOW_AND_FANOUT whose fanout items and subflow children are in the store."""
    engine = Engine(store=SQLiteStore(path))
    run = engine.plan(SUBFLOW_AND_FANOUT, {"topic": "t"})
    engine.step_done(run["run_id"], "plan", {"xs": ["p", "q"]}, run["token"])
    engine.close()
    return run["run_id"]


@pytest.mark.parametrize("step_id", ["fan/1", "child/ok"])
def test_a_deleted_item_or_child_record_is_a_store_error(tmp_path: Path, step_id: str) -> None:
    path = tmp_path / "s.db"
    run = _fanning(path)
    _delete_record(path, step_id)
    engine = Engine(store=SQLiteStore(path))
    with pytest.raises(StoreError) as caught:
        engine.status(run)
    assert str(caught.value) == MISSING.format(step=step_id, run=run)
    engine.close()


def test_a_run_with_every_record_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run = _fanning(path)
    status = Engine(store=SQLiteStore(path)).status(run)
    assert {entry["step_id"] for entry in status["ready"]} >= {"fan/0", "fan/1", "child/a"}


def test_verify_names_an_event_count_edited_into_text(tmp_path: Path) -> None:
    """SQLite keeps any value an edit puts in ``runs.event_count``: ``verify`` says the row was
    edited instead of failing with an internal TypeError (review s8-r6 #6)."""
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    store.create_run("r1", HEADER, {}, [event(1), event(2)])
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET event_count = 'two' WHERE run_id = 'r1'")
    db.close()
    report = SQLiteStore(path).verify("r1")
    assert (report.ok, report.problem) == (False, "edited")
    assert report.message == "the run's recorded event count 'two' is not a number: its row was edited"
