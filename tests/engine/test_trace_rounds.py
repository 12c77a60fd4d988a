"""The audit trace keeps what a step did in the rounds a gate's revise ended (review s11 MCP #7:
after a revise the trace showed only the last round: ``work`` with one attempt and one dispatch
while the run spent four; the earlier attempts and their failures were only in raw events)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from engine_support import Fail, Script, drive

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${work.output}", contract: Note}
    max_rounds: 3
    steps:
      - id: work
        do: "write about ${input.topic}"
        out: Note
      - id: review
        after: [work]
        gate: {on_approve: null, on_revise: work, on_kill: null}
"""


def _trace(engine: Engine, run_id: str) -> dict[str, dict]:
    return {t["step_id"]: t for t in engine.audit(run_id)["trace"]}


def test_each_revised_round_of_a_step_stays_in_the_trace(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    engine = Engine(store=open_store(path))
    run_id = engine.plan(SPEC, {"topic": "tides"})["run_id"]
    agent = Script({"work": [Fail("too short"), {"text": "first"}, {"text": "second"}]})
    final = drive(engine, run_id, agent, {"review": ["revise", "approve"]})
    assert final["status"] == "complete" and final["output"] == {"text": "second"}
    engine.close()
    work = _trace(Engine(store=open_store(path)), run_id)["work"]  # read back from the store
    assert (work["attempts"], work["round"], work["spent"]) == (1, 1, {"dispatches": 1})
    [earlier] = work["earlier_rounds"]
    assert (earlier["epoch"], earlier["status"], earlier["attempts"]) == (0, "succeeded", 2)
    assert earlier["spent"] == {"dispatches": 2}
    assert "revision" not in earlier  # the first round was not started by a revise
    assert earlier["failure"]["reason"] == "agent reported failure: too short"  # its retry succeeded


def test_a_step_that_never_started_in_a_round_adds_nothing() -> None:
    spec = SPEC.replace("on_approve: null", "on_approve: publish") + (
        "      - id: publish\n        after: [review]\n        do: \"publish\"\n        out: Note\n")
    engine = Engine()
    run_id = engine.plan(spec, {"topic": "tides"})["run_id"]
    agent = Script({"work": [{"text": "a"}], "publish": [{"text": "p"}]})
    assert drive(engine, run_id, agent, {"review": ["revise", "revise", "approve"]})["status"] == "complete"
    trace = _trace(engine, run_id)
    assert [r["epoch"] for r in trace["work"]["earlier_rounds"]] == [0, 1]
    assert trace["work"]["earlier_rounds"][1]["revision"]["round"] == 1
    review_rounds = trace["review"]["earlier_rounds"]
    assert [r["status"] for r in review_rounds] == ["waiting_gate", "waiting_gate"]
    # each round of the gate says the revise that ended it (review s12 late #2: it said nothing)
    assert [r["decision"] for r in review_rounds] == ["revise", "revise"]
    assert "earlier_rounds" not in trace["publish"]  # reset twice, but it only ran in the last round


FALLBACK = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${fallback.output}", contract: Note}
    max_rounds: ROUNDS
    steps:
      - id: work
        do: "write about ${input.topic}"
        out: Note
        attempts: 1
        on_fail: fallback
      - id: fallback
        do: "fallback"
        out: Note
      - id: review
        after: [fallback]
        gate: {on_approve: null, on_revise: work, on_kill: null}
"""


def test_earlier_rounds_keep_a_short_failure_and_only_the_last_rounds(tmp_path: Path) -> None:
    """Review r3 #3: each round's summary kept the whole failure (up to 64 KiB) and every round
    was kept, and every change of the step rewrites its record: drive time grew with the square
    of the rounds. The summary keeps the failure's kind, its reason cut short and how many
    violations it had; the record keeps the last KEPT_ROUNDS rounds and counts the others."""
    from lockgate.engine.rounds import KEPT_ROUNDS, SUMMARY_CHARS

    rounds = KEPT_ROUNDS + 3
    path = str(tmp_path / "runs.db")
    engine = Engine(store=open_store(path))
    run_id = engine.plan(FALLBACK.replace("ROUNDS", str(rounds)), {"topic": "tides"})["run_id"]
    reason = "the draft misses the point: " + "x" * 20_000
    agent = Script({"work": [Fail(reason)], "fallback": [{"text": "fb"}]})
    assert drive(engine, run_id, agent, {"review": ["revise"] * rounds + ["approve"]})["status"] == "complete"
    engine.close()
    work = _trace(Engine(store=open_store(path)), run_id)["work"]
    earlier = work["earlier_rounds"]
    assert (len(earlier), work["earlier_rounds_left_out"]) == (KEPT_ROUNDS, 3)
    assert [r["epoch"] for r in earlier] == list(range(3, rounds))  # the last ones, in order
    failure = earlier[-1]["failure"]
    assert (failure["kind"], failure["violations"]) == ("reported", 1)
    assert failure["reason"].startswith("agent reported failure: the draft misses the point: xxx")
    assert len(failure["reason"]) < SUMMARY_CHARS + 200 and "cut: 20052 characters" in failure["reason"]
    assert len(json.dumps(earlier)) < KEPT_ROUNDS * 1000  # small, however long the failures


SUBFLOW = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  child:
    input: {topic: string}
    output: {from: "${work.output}", contract: Note}
    steps:
      - id: work
        do: "work on ${input.topic}"
        out: Note
  main:
    input: {topic: string}
    output: {from: "${sub.output}", contract: Note}
    max_rounds: 3
    steps:
      - id: sub
        run: child
        with: {topic: "${input.topic}"}
      - id: review
        after: [sub]
        gate: {on_approve: null, on_revise: sub, on_kill: null}
"""


def test_a_run_steps_earlier_round_says_what_its_children_did() -> None:
    """Review r3 #4: a revise drops a run step's children; what they did in the round it ends
    (a failed first attempt here) was lost from the trace."""
    engine = Engine()
    run_id = engine.plan(SUBFLOW, {"topic": "tides"})["run_id"]
    failed = Fail("round 1 failed: the reason a reviewer wants")
    agent = Script({"sub/work": [failed, {"text": "r1"}, {"text": "r2"}]})
    assert drive(engine, run_id, agent, {"review": ["revise", "approve"]})["status"] == "complete"
    [earlier] = _trace(engine, run_id)["sub"]["earlier_rounds"]
    children = earlier["children"]
    assert (children["count"], children["statuses"], children["attempts"]) == (1, {"succeeded": 1}, 2)
    assert (children["dispatches"], children["failures"]) == (2, 1)
    assert children["first_failure"] == {"step_id": "sub/work", "kind": "reported", "attempt": 1, "violations": 1,
                                         "reason": "agent reported failure: round 1 failed: the reason a reviewer wants"}


FANOUT = """version: 1
contracts:
  Note: {text: string}
  Files: {files: "string[]"}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${list.output}", contract: Files}
    max_rounds: 3
    steps:
      - id: list
        do: "list"
        out: Files
      - id: fan
        fanout:
          over: "${list.output.files}"
          concurrency: 2
          isolation: none
          require: any
          merge: sequential
          steps:
            - do: "review ${item}"
              out: Note
        attempts: 2
      - id: review
        after: [fan]
        gate: {on_approve: null, on_revise: fan, on_kill: null}
"""


def test_a_fanouts_earlier_round_says_what_its_items_did() -> None:
    """Review r3 #4: the items' records are dropped by the revise, their failures with them."""
    engine = Engine()
    run_id = engine.plan(FANOUT, {"topic": "tides"})["run_id"]
    failed = []

    def item(entry: dict) -> object:
        if not failed:
            failed.append(entry["step_id"])
            return Fail(f"item failure on {entry['step_id']}")
        return {"text": "ok"}

    agent = Script({"list": [{"files": ["a", "b"]}], "fan/*": item})
    assert drive(engine, run_id, agent, {"review": ["revise", "approve"]})["status"] == "complete"
    trace = _trace(engine, run_id)
    [earlier] = trace["fan"]["earlier_rounds"]
    items = earlier["items"]
    assert (items["count"], items["statuses"], items["attempts"], items["failures"]) == (2, {"succeeded": 2}, 3, 1)
    first = items["first_failure"]
    assert (first["step_id"], first["stage"]) == (failed[0], 0)
    assert first["reason"] == f"agent reported failure: item failure on {failed[0]}"
    assert trace["fan/0"]["attempts"] == 1  # the items' own entries are this round's


def test_a_gate_round_stored_with_its_whole_decision_reads_as_its_name(tmp_path: Path) -> None:
    """Records written before a2066ed kept an earlier round's decision as {decision,
    resolved_by, rationale}; read back, it is the decision's name, as now, and ``lockgate
    show`` prints it (it crashed with TypeError: unhashable type: 'dict', review s13a F1)."""
    path = tmp_path / "runs.db"
    engine = Engine(store=open_store(str(path)))
    run_id = engine.plan(SPEC, {"topic": "tides"})["run_id"]
    agent = Script({"work": [{"text": "first"}, {"text": "second"}]})
    assert drive(engine, run_id, agent, {"review": ["revise", "approve"]})["status"] == "complete"
    engine.close()
    with sqlite3.connect(path) as db:
        old = {"decision": "revise", "resolved_by": "human", "rationale": "again"}
        changed = db.execute("UPDATE steps SET record = json_set(record, '$.history[0].decision', json(?)) "
                             "WHERE step_id = 'review'", (json.dumps(old),)).rowcount
    assert changed == 1
    assert [r["decision"] for r in _trace(Engine(store=open_store(str(path))), run_id)["review"]["earlier_rounds"]] \
        == ["revise"]
    shown = subprocess.run([sys.executable, "-m", "lockgate", "show", run_id, "--store", str(path)],
                           capture_output=True, text=True, timeout=120, check=False,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert shown.returncode == 0, shown.stderr
    assert "review  1 round: revised" in shown.stdout
