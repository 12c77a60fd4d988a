"""A database written by the version-1 SQLite store opens with the current one, upgraded in place."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lockgate.engine.store import SQLiteStore
from lockgate.engine.store.chain import GENESIS_HASH, chain_events, head_hash
from lockgate.engine.store.sqlite_schema import SCHEMA_VERSION

AT = "2025-03-01T12:00:00+00:00"

# The version-1 schema, as lockgate/engine/store/sqlite.py created it.
V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    flow TEXT NOT NULL,
    status TEXT NOT NULL,
    header TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    event_count INTEGER NOT NULL,
    head_hash TEXT NOT NULL
);
CREATE INDEX runs_status ON runs (status, id);
CREATE TABLE steps (
    run_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (run_id, step_id)
) WITHOUT ROWID;
CREATE TABLE events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    step_id TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
"""

STEPS = {"b": {"status": "succeeded", "n": 2}, "a": {"status": "pending"}, "c/10": {"status": "ready"}}


def _events(count: int) -> list[dict]:
    return [{"type": "step_done", "step_id": f"s{i}", "detail": {"i": i}, "at": AT} for i in range(count)]


def _write_v1_run(db: sqlite3.Connection, run_id: str, status: str, events: int) -> None:
    links = chain_events(run_id, _events(events), GENESIS_HASH, 1, AT)
    header = json.dumps({"status": status, "flow": "main", "inputs": {"x": 1}})
    db.execute("INSERT INTO runs (run_id, flow, status, header, version, created_at, updated_at, event_count,"
               " head_hash) VALUES (?, 'main', ?, ?, 3, ?, ?, ?, ?)",
               (run_id, status, header, AT, AT, len(links), head_hash(links)))
    db.executemany("INSERT INTO steps (run_id, step_id, record) VALUES (?, ?, ?)",
                   [(run_id, step_id, json.dumps(record)) for step_id, record in STEPS.items()])
    db.executemany("INSERT INTO events (run_id, seq, at, type, step_id, detail, prev_hash, hash)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(run_id, *link) for link in links])


@pytest.fixture
def v1_file(tmp_path: Path) -> Path:
    """A version-1 database with two runs (the second created last, listed first)."""
    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as db:
        db.executescript(V1_SCHEMA)
        _write_v1_run(db, "older", "running", 7)
        _write_v1_run(db, "newer", "complete", 3)
    db.close()
    return path


def _schema_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        (value,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    db.close()
    return int(value)


def test_a_version_1_file_is_upgraded_and_reads_the_same(v1_file: Path) -> None:
    store = SQLiteStore(v1_file)
    assert _schema_version(v1_file) == SCHEMA_VERSION == 2
    run = store.load_run("older")
    assert (run.version, run.steps, run.header["inputs"]) == (3, STEPS, {"x": 1})
    expected = chain_events("older", _events(7), GENESIS_HASH, 1, AT)
    assert [(e.seq, e.hash, e.detail) for e in store.events("older")] == [
        (link.seq, link.hash, json.loads(link.detail_json)) for link in expected]
    assert [e.seq for e in store.events("older", 5)] == [6, 7]
    assert store.verify("older").ok and store.verify("older").count == 7
    assert store.verify("newer").ok and store.verify("newer").count == 3
    assert [r.run_id for r in store.list_runs()] == ["newer", "older"]
    assert [r.run_id for r in store.list_runs(status="running")] == ["older"]
    store.close()


def test_an_upgraded_file_takes_further_saves_from_a_cold_and_a_warm_store(v1_file: Path) -> None:
    cold = SQLiteStore(v1_file)
    version = cold.save_run("older", expected_version=3, header={"status": "running", "flow": "main"},
                            steps={"a": {"status": "ready"}, "d": {"status": "pending"}},
                            events=[{"type": "late", "at": AT}])
    warm = SQLiteStore(v1_file)
    run = warm.load_run("older")
    version = warm.save_run("older", expected_version=version, header={"status": "complete", "flow": "main"},
                            steps={"d": {"status": "succeeded"}, "e": {}}, events=[{"type": "end", "at": AT}])
    assert version == 5 and run.steps["a"] == {"status": "ready"}
    assert cold.load_run("older").steps == {**STEPS, "a": {"status": "ready"}, "d": {"status": "succeeded"}, "e": {}}
    assert [e.type for e in cold.events("older", 7)] == ["late", "end"]
    assert cold.verify("older").ok and cold.verify("older").count == 9
    assert [r.run_id for r in cold.list_runs(status="complete")] == ["newer", "older"]
    cold.close()
    warm.close()


def test_the_upgrade_keeps_the_old_tables_out_and_reopens_as_is(v1_file: Path) -> None:
    SQLiteStore(v1_file).close()
    SQLiteStore(v1_file).close()
    with sqlite3.connect(v1_file) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    db.close()
    assert {"steps", "events", "runs", "meta"} <= names
    assert not any(name.endswith("_v1") for name in names)


def test_tampering_done_before_the_upgrade_is_still_reported(v1_file: Path) -> None:
    with sqlite3.connect(v1_file) as db:
        db.execute("UPDATE events SET seq = -1 WHERE run_id = 'older' AND seq = 3")
        db.execute("UPDATE events SET seq = 3 WHERE run_id = 'older' AND seq = 4")
        db.execute("UPDATE events SET seq = 4 WHERE run_id = 'older' AND seq = -1")
        db.execute("UPDATE events SET seq = 9 WHERE run_id = 'newer' AND seq = 2")
    db.close()
    store = SQLiteStore(v1_file)
    report = store.verify("older")
    assert (report.ok, report.first_bad_seq, report.problem) == (False, 3, "reordered")
    report = store.verify("newer")
    assert (report.ok, report.first_bad_seq, report.problem) == (False, 2, "deleted")
    store.close()
