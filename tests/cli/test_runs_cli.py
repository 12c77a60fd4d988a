"""The run inspection and steering commands against a real SQLite store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from specs import REVIEWED

from lockgate.cli import main
from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = REVIEWED


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


def gate_run(db: Path) -> str:
    engine = Engine(store=open_store(db))
    first = engine.plan(SPEC, {"text": "the thing"})
    engine.step_done(first["run_id"], "work", {"result": "done"}, first["token"])
    engine.close()
    return first["run_id"]


def cli(db: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--store", str(db)])
    return result.exit_code, result.output


def test_runs_show_and_why_point_at_the_waiting_gate(db: Path) -> None:
    run = gate_run(db)
    code, out = cli(db, "runs")
    assert code == 0 and run in out and "running" in out
    code, out = cli(db, "show", run)
    assert code == 0 and "work    do    succeeded" in out and "review  gate  waiting_gate" in out
    code, out = cli(db, "why", run)
    assert code == 0 and f'lockgate gate approve {run} review --note "..."' in out
    code, out = cli(db, "why", run, "--format", "json")
    assert json.loads(out)["waits"][0]["kind"] == "gate"


def test_show_names_the_attempt_a_dispatched_step_is_on_as_why_does(db: Path) -> None:
    engine = Engine(store=open_store(db))
    run = engine.plan(SPEC, {"text": "the thing"})["run_id"]
    engine.close()
    code, out = cli(db, "show", run)
    assert code == 0 and "work    do    dispatched, attempt 1  0" in out
    code, out = cli(db, "why", run)
    assert "(attempt 1, 1 retry left)" in out


def test_a_decision_on_a_run_another_process_drives_says_it_carries_on_there(db: Path) -> None:
    from lockgate.engine.drivers import Driver

    engine = Engine(store=open_store(db))
    first = engine.plan(SPEC, {"text": "the thing"}, driver=Driver.here())  # this live process drives it
    engine.step_done(first["run_id"], "work", {"result": "done"}, first["token"])
    engine.close()
    code, out = cli(db, "gate", "revise", first["run_id"], "review", "--note", "again")
    assert code == 0 and "1 step(s) to execute: work" in out
    assert "on this host is driving the run: it carries on there" in out
    assert "lockgate run --resume" not in out


def test_gate_commands_resolve_with_the_current_token(db: Path) -> None:
    run = gate_run(db)
    code, out = cli(db, "gate", "revise", run, "review", "--note", "again")
    assert code == 0 and "1 step(s) to execute: work" in out
    code, out = cli(db, "gate", "approve", run, "review")
    assert code == 1 and "is not waiting for a decision (its last: revise by human: again)" in out
    engine = Engine(store=open_store(db))
    status = engine.status(run)
    engine.step_done(run, "work", {"result": "better"}, status["token"])
    code, out = cli(db, "gate", "approve", run, "review", "--note", "good", "--by", "ana")
    assert code == 0 and '"result": "better"' in out
    decisions = {t["step_id"]: t for t in Engine(store=open_store(db)).audit(run)["trace"]}["review"]["decisions"]
    assert [(d["decision"], d["rationale"], d["resolved_by"]) for d in decisions] == [
        ("revise", "again", "human"), ("approve", "good", "ana")]


def test_reject_kills_the_run(db: Path) -> None:
    run = gate_run(db)
    code, out = cli(db, "gate", "reject", run, "review", "--note", "no")
    assert code == 0 and "killed" in out
    code, out = cli(db, "runs", "--status", "killed", "--format", "json")
    assert [r["run_id"] for r in json.loads(out)] == [run]


def test_commit_revert_cancel_and_resume(db: Path) -> None:
    run = gate_run(db)
    code, out = cli(db, "commit", run, "at-gate")
    assert code == 0 and "checkpoint 'at-gate' saved at step 2 (review)" in out
    assert cli(db, "gate", "approve", run, "review")[0] == 0
    code, out = cli(db, "revert", run, "at-gate")
    assert code == 0 and "gate review waits" in out
    code, out = cli(db, "resume", run, "--format", "json")
    assert code == 0 and json.loads(out)["status"] == "await_gate"
    code, out = cli(db, "cancel", run)
    assert code == 0 and "cancelled" in out
    code, out = cli(db, "revert", run, "at-gate")
    assert code == 1 and f"error: run {run} is cancelled" in out


def test_audit_and_verify_detect_tampering(db: Path) -> None:
    run = gate_run(db)
    code, out = cli(db, "audit", run)
    assert code == 0 and "planned" in out and "gate_waiting" in out
    code, out = cli(db, "audit", run, "--format", "json")
    assert [e["type"] for e in json.loads(out)["events"]][:2] == ["planned", "ready"]
    code, out = cli(db, "verify", run)
    assert code == 0 and out.startswith(f"run {run}: audit chain intact (4 events)\n")
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        table = next(t for t in tables if "event" in t)
        columns = [r[1] for r in conn.execute(f"pragma table_info({table})")]
        detail = next(c for c in columns if "detail" in c)
        conn.execute(f"update {table} set {detail} = ? where seq = 3", ('{"attempt": 9}',))
    code, out = cli(db, "verify", run)
    assert code == 1 and "BROKEN at event 3" in out


def test_unknown_runs_are_a_clear_error(db: Path) -> None:
    gate_run(db)
    code, out = cli(db, "show", "nope")
    assert code == 1 and "error: no run with id 'nope'" in out
