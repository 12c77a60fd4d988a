"""A run whose stored header or records are valid JSON of the wrong shape (a store edited by
hand) fails to load with a StoreError naming the run and the record, as text that is not JSON
does, never with a Python error from deep inside the engine; other runs are not affected."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from specs import REVIEWED

from lockgate.engine import Engine, load_live
from lockgate.engine.drivers import Driver, ended
from lockgate.engine.live import Env, load
from lockgate.engine.model import Header, StepState
from lockgate.engine.store import SQLiteStore
from lockgate.errors import StoreError

SPEC = REVIEWED

DAMAGED = "in the store is not"
EDITED = "the store was edited or damaged"


def gate_runs(path: Path) -> tuple[str, str]:
    """Two runs waiting at their gate; the first has a checkpoint and a driver record."""
    engine = Engine(store=SQLiteStore(path))
    ids = []
    for text in ("one", "two"):
        first = engine.plan(SPEC, {"text": text})
        engine.step_done(first["run_id"], "work", {"result": "done"}, first["token"])
        ids.append(first["run_id"])
    engine.commit(ids[0], "at-gate")
    driver = Driver.here()
    engine.claim(ids[0], driver)
    engine.release(ids[0], driver)
    ended(driver)
    engine.close()
    return ids[0], ids[1]


def edit(path: Path, sql: str, *params: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)
    db.close()


def load_run(path: Path, run_id: str) -> object:
    store = SQLiteStore(path)
    try:
        return load(store.load_run(run_id), Env())
    finally:
        store.close()


HEADER = "UPDATE runs SET header = ? WHERE run_id = ?"
RECORD = "UPDATE steps SET record = ? WHERE run_id = ? AND step_id = '{}'"

CASES = [
    (HEADER, "{}", "the header of run {run}", "not a run header (it has no 'id')"),
    (HEADER, "[]", "the header of run {run}", "not a run header (it is an array, not an object)"),
    (HEADER, '{"id": "x", "flow": "reviewed", "status": 3}', "the header of run {run}", "its 'status' is an integer"),
    (HEADER, '{"id": "x", "flow": "reviewed", "status": "paused"}', "the header of run {run}", "its status 'paused'"),
    (RECORD.format("work"), "[]", "the record of step 'work' of run {run}", "it is an array"),
    (RECORD.format("work"), '"str"', "the record of step 'work' of run {run}", "it is a string"),
    (RECORD.format("work"), '{"status": "pending"}', "the record of step 'work' of run {run}", "it has no 'key'"),
    (RECORD.format("work"), '{"key": "review", "status": "pending"}', "the record of step 'work' of run {run}",
     "its key is 'review'"),
    (RECORD.format("work"), '{"key": "work", "attempts": {}}', "the record of step 'work' of run {run}",
     "its 'attempts' is an object"),
    (RECORD.format("@spec"), '"str"', "the record '@spec' of run {run}", "not a spec record (it is a string"),
    (RECORD.format("@spec"), '{"key": "@spec"}', "the record '@spec' of run {run}", "it has no 'data'"),
    (RECORD.format("@spec"), '{"data": []}', "the record '@spec' of run {run}", "its 'data' is an array"),
    (RECORD.format("@driver"), "[]", "the record '@driver' of run {run}", "not a driver record"),
    (RECORD.format("@driver"), '{"owner": 7}', "the record '@driver' of run {run}", "its 'owner' is an integer"),
    (RECORD.format("@cp/at-gate"), "[]", "the record '@cp/at-gate' of run {run}", "not a checkpoint record"),
    (RECORD.format("@cp/at-gate"), '{"label": "at-gate", "header": {"rounds": "x"}, "steps": {}}',
     "the record '@cp/at-gate' of run {run}", "its 'rounds' is a string"),
    (RECORD.format("@cp/at-gate"), '{"label": "at-gate", "header": {}, "steps": []}',
     "the record '@cp/at-gate' of run {run}", "its 'steps' is an array"),
]


@pytest.mark.parametrize(("sql", "value", "what", "problem"), CASES)
def test_a_wrong_shape_fails_the_load_naming_run_and_record(tmp_path: Path, sql: str, value: str, what: str,
                                                            problem: str | None) -> None:
    path = tmp_path / "runs.db"
    run, other = gate_runs(path)
    edit(path, sql, value, run)
    with pytest.raises(StoreError) as raised:
        load_run(path, run)
    message = str(raised.value)
    assert message.startswith(what.format(run=repr(run)) + " " + DAMAGED), message
    assert message.endswith(EDITED)
    assert problem is None or problem in message
    assert load_run(path, other).header.status == "running"  # type: ignore[attr-defined]


def test_a_header_naming_a_flow_its_spec_lacks_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run, _ = gate_runs(path)
    edit(path, "UPDATE runs SET header = json_set(header, '$.flow', 'other') WHERE run_id = ?", run)
    with pytest.raises(StoreError, match=r"not this run's header \(its spec has no flow 'other'\)"):
        load_run(path, run)


def test_a_step_record_the_spec_has_no_step_for_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run, _ = gate_runs(path)
    edit(path, "UPDATE steps SET step_id = 'ghost', record = '{\"key\": \"ghost\"}' "
               "WHERE run_id = ? AND step_id = 'work'", run)
    with pytest.raises(StoreError, match=rf"a step record of run '{run}' in the store is not one its spec has "
                                         r"\(KeyError: 'ghost'\): the store was edited or damaged"):
        load_run(path, run)


def test_an_untouched_run_loads_as_the_engine_loads_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run, _ = gate_runs(path)
    loaded = load_run(path, run)
    store = SQLiteStore(path)
    live = load_live(store, run, Env())
    store.close()
    assert loaded.header == live.header and loaded.header.inputs == {"text": "one"}  # type: ignore[attr-defined]
    assert loaded.steps == live.steps and set(live.steps) == {"work", "review"}  # type: ignore[attr-defined]
    assert loaded.checkpoint_records == live.checkpoint_records  # type: ignore[attr-defined]
    assert list(live.checkpoint_records) == ["at-gate"]
    assert loaded.driver == live.driver and live.driver["owner"] is None  # type: ignore[attr-defined]
    assert loaded.waiting == live.waiting == {"review": None}  # type: ignore[attr-defined]


def test_records_round_trip_through_their_checks() -> None:
    st = StepState("fan/2", status="running", epoch=1, attempts=[{"n": 1}], token="t", index=2, item={"x": 1},
                   spent={"usd": 0.5}, issued_at=1.5, fan={"count": 3})
    assert StepState.from_dict(st.to_dict(), "fan/2", "r") == st
    header = Header("r", "main", rounds=2, spent={"usd": 1}, checkpoints=["c"], created_at=1, finished_at=2.5)
    assert Header.from_dict(header.to_dict(), "r") == header


def test_without_names_the_checks_name_what_the_data_gives() -> None:
    with pytest.raises(StoreError, match=r"^the record of step 'w' in the store is not a step record \(its "
                                         r"'epoch' is a string: 'x'\)"):
        StepState.from_dict({"key": "w", "epoch": "x"})
    with pytest.raises(StoreError, match=r"^the header of run 'r' in the store is not a run header \(it has no "
                                         r"'flow'\)"):
        Header.from_dict({"id": "r"})
    with pytest.raises(StoreError, match=r"^the run's header in the store is not a run header \(it is null"):
        Header.from_dict(None)


def test_the_engine_reports_a_damaged_step_record_and_lists_every_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run, other = gate_runs(path)
    edit(path, RECORD.format("work"), "[]", run)
    engine = Engine(store=SQLiteStore(path))
    for call in (engine.status, engine.audit, engine.why, engine.cancel, engine.resume):
        with pytest.raises(StoreError, match=f"{DAMAGED} a step record .*: {EDITED}"):
            call(run)
    assert {r["run_id"] for r in engine.runs()} == {run, other}
    assert engine.status(other)["status"] == "await_gate"
    engine.close()


def test_a_damaged_spec_record_is_named_and_pending_gates_lists_the_other_runs(tmp_path: Path) -> None:
    from lockgate.engine.graphs import stored_spec

    path = tmp_path / "runs.db"
    run, other = gate_runs(path)
    edit(path, RECORD.format("@spec"), '"str"', run)
    engine = Engine(store=SQLiteStore(path))
    with pytest.raises(StoreError, match=f"the record '@spec' of run {run!r} {DAMAGED} a spec record"):
        engine.status(run)
    with pytest.raises(StoreError, match=f"the record '@spec' of run {run!r} {DAMAGED} a spec record"):
        stored_spec(engine.store, run)  # what `lockgate graph RUN` and the hints read
    assert [(g["run_id"], g["step_id"]) for g in engine.pending_gates()] == [(other, "review")]
    engine.close()
