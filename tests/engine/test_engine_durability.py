"""Durability: resume in a new engine, two processes racing on one run, SIGKILL at random points."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from engine_support import Script, drive

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError, StaleToken

HERE = Path(__file__).parent

CHAIN = """
version: 1
contracts:
  N:
    n: integer
flows:
  entry: main
  main:
    input:
      items: integer[]
    output:
      from: "${last.output}"
      contract: N
    steps:
      - id: s1
        do: "one"
        out: N
      - id: s2
        do: "two after ${s1.output.n}"
        out: N
      - id: s3
        do: "three after ${s2.output.n}"
        out: N
      - id: side
        after: [s1]
        do: "side step"
        out: N
      - id: gate
        after: [s3, side]
        gate:
          on_approve: null
          on_revise: null
          on_kill: null
      - id: fan
        after: [gate]
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "item ${item}"
              out: N
      - id: last
        do: "last ${fan.output[5].n} ${s3.output.n}"
        out: N
"""


def test_resume_in_a_new_engine_returns_the_same_tokens_and_finishes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first_engine = Engine(store=open_store(db))
    first = first_engine.plan(CHAIN, {"items": [1, 2, 3, 4, 5, 6]})
    run = first["run_id"]
    nxt = first_engine.step_done(run, "s1", {"n": 3}, first["token"])
    held = {r["step_id"]: r["token"] for r in nxt["ready"]}
    first_engine.close()

    second = Engine(store=open_store(db))
    resumed = second.resume(run)
    assert {r["step_id"]: r["token"] for r in resumed["ready"]} == held
    assert resumed["digest"] == first["digest"]
    done = drive(second, run, Script({"s2": [{"n": 1}], "s3": [{"n": 2}], "side": [{"n": 0}],
                                      "fan/*": lambda e: {"n": e["item"]}, "last": lambda e: {"n": len(e["task"])}}))
    assert done["status"] == "complete" and done["output"] == {"n": len("last 6 2")}
    assert second.verify(run)["ok"] is True
    events = Counter(e["type"] for e in second.audit(run)["events"])
    assert events["resumed"] == 1 and events["planned"] == 1


def test_a_stored_spec_that_was_edited_is_refused_on_resume(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    engine = Engine(store=open_store(db))
    run = engine.plan(CHAIN, {"items": [1]})["run_id"]
    engine.close()
    store = open_store(db)
    stored = store.load_run(run)
    data = stored.steps["@spec"]["data"]
    data["flows"]["main"]["steps"][0]["do"] = "something else"
    store.save_run(run, expected_version=stored.version, header=stored.header,
                   steps={"@spec": {"key": "@spec", "data": data}}, events=[])
    with pytest.raises(EngineError) as caught:
        Engine(store=store).resume(run)
    assert caught.value.error_type == "spec_digest_mismatch"


def _racer(db: str, run: str, step: str, token: str, output: dict, barrier, results) -> None:
    engine = Engine(store=open_store(db))
    engine.status(run)
    barrier.wait()
    try:
        engine.step_done(run, step, output, token)
        results.put(("ok", step))
    except StaleToken as exc:
        results.put((exc.detail.get("reason"), step))
    except EngineError as exc:
        results.put((exc.error_type, step))


def _race(db: Path, run: str, jobs: list[tuple[str, str, dict]]) -> list[tuple[str, str]]:
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(len(jobs))
    results = ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(str(db), run, step, token, output, barrier, results))
             for step, token, output in jobs]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    return sorted(results.get(timeout=10) for _ in jobs)


def test_two_processes_reporting_the_same_result_one_wins_one_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    engine = Engine(store=open_store(db))
    first = engine.plan(CHAIN, {"items": [1]})
    run = first["run_id"]
    outcome = _race(db, run, [("s1", first["token"], {"n": 1}), ("s1", first["token"], {"n": 2})])
    assert [o[0] for o in outcome] == ["differs", "ok"]  # the loser's result was not the one kept
    audit = Engine(store=open_store(db)).audit(run)
    s1 = [e for e in audit["events"] if e["type"] == "result" and e["step_id"] == "s1"]
    assert len(s1) == 1
    assert Engine(store=open_store(db)).verify(run)["ok"] is True


def test_two_processes_reporting_different_steps_both_land(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    engine = Engine(store=open_store(db))
    first = engine.plan(CHAIN, {"items": [1]})
    run = first["run_id"]
    ready = engine.step_done(run, "s1", {"n": 1}, first["token"])["ready"]
    assert sorted(r["step_id"] for r in ready) == ["s2", "side"]
    outcome = _race(db, run, [(r["step_id"], r["token"], {"n": 5}) for r in ready])
    assert outcome == [("ok", "s2"), ("ok", "side")]
    trace = {t["step_id"]: t for t in Engine(store=open_store(db)).audit(run)["trace"]}
    assert trace["s2"]["output"] == {"n": 5} and trace["side"]["output"] == {"n": 5}


def _start(db: Path, spec: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HERE / "engine_crash_driver.py"), str(db), str(spec), *args],
                            stdout=subprocess.PIPE, text=True, cwd=HERE, env={**os.environ, "PYTHONPATH": str(HERE)})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_at_random_points_then_resume_redoes_nothing_and_loses_nothing(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "runs.db"
    spec = tmp_path / "chain.yaml"
    spec.write_text(CHAIN)
    proc = _start(db, spec, "plan")
    assert proc.stdout is not None
    run = json.loads(proc.stdout.readline())["run_id"]
    kills = 0
    while True:
        lines_before_kill = rng.randint(1, 6)
        finished = None
        for _ in range(lines_before_kill):
            line = proc.stdout.readline()
            if not line:
                break
            if "final" in line:
                finished = json.loads(line)
                break
        if finished is not None:
            proc.wait(30)
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        kills += 1
        proc = _start(db, spec, "resume", run)
        assert proc.stdout is not None
        proc.stdout.readline()
    assert finished["final"] == "complete"
    assert finished["output"] == {"n": len("last 60 ") + len(str(len("three after 12")))}
    engine = Engine(store=open_store(db))
    assert engine.verify(run)["ok"] is True
    events = engine.audit(run)["events"]
    issued = Counter(e["step_id"] for e in events if e["type"] in ("ready", "fanout_item_ready"))
    accepted = Counter(e["step_id"] for e in events if e["type"] in ("result", "fanout_attempt_result"))
    assert set(issued.values()) == {1}, issued
    assert set(accepted.values()) == {1}, accepted
    assert kills >= 1 or seed == 0
