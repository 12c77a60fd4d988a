"""``lockgate runs`` says what each running run waits on (the store calls them all ``running``):
a gate waiting for a person, the live process driving it, or nobody (idle: resume it); and
``--status await_gate`` lists the runs a gate holds, newest first, up to ``--limit``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.dsl.loader import load
from lockgate.engine.drivers import Driver
from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store

#: work, then gate review (which can approve, revise or kill)
SPEC = (Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml").read_text()


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return str(tmp_path / "runs.db")


def invoke(store: str, *args: str):
    result = CliRunner().invoke(main, ["runs", *args, "--store", store], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def plan(engine: Engine, *, at_gate: bool) -> str:
    """A run of the reviewed-work example, waiting at its gate or for its first agent."""
    first = engine.plan(load(SPEC).spec, {"text": "tea"})
    if at_gate:
        engine.step_done(first["run_id"], "work", {"result": "r", "quality_score": 1}, first["token"])
    return first["run_id"]


def waiting_on(listing: str) -> dict[str, str]:
    """Each listed run's WAITING ON cell."""
    header, *rows = listing.splitlines()
    column = header.index("WAITING ON")
    return {row.split()[0]: row[column:].strip() for row in rows}


def test_a_running_run_says_whether_a_gate_a_process_or_nobody_holds_it(store):
    engine = Engine(store=open_store(store))
    gated, idle, driven = plan(engine, at_gate=True), plan(engine, at_gate=False), plan(engine, at_gate=False)
    engine.claim(driven, Driver.here())  # this test's process is alive: it drives the run
    finished = plan(engine, at_gate=True)
    engine.resolve_waiting_gate(finished, "review", "approve")
    engine.close()
    assert waiting_on(invoke(store)) == {
        gated: "waiting at gate review", idle: "idle (nobody drives it: resume it)",
        driven: f"driven by process {os.getpid()}", finished: ""}
    listed = {run["run_id"]: run for run in json.loads(invoke(store, "--format", "json"))}
    assert listed[gated]["waiting"] == {"gates": ["review"], "driver": None, "waiting_on": "waiting at gate review"}
    assert listed[driven]["waiting"]["driver"]["pid"] == os.getpid()
    assert "waiting" not in listed[finished]


def test_await_gate_lists_only_the_runs_a_gate_holds_newest_first_within_the_limit(store):
    engine = Engine(store=open_store(store))
    gated = [plan(engine, at_gate=i % 3 == 0) for i in range(12)]
    engine.close()
    expected = [run for i, run in enumerate(gated) if i % 3 == 0][::-1]
    assert list(waiting_on(invoke(store, "--status", "await_gate"))) == expected
    # fewer than --limit running runs hold a gate among the first --limit read: it reads on
    assert [r["run_id"] for r in json.loads(invoke(store, "--status", "await_gate", "--limit", "3",
                                                   "--format", "json"))] == expected[:3]
