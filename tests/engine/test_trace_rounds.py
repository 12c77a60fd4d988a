"""The audit trace keeps what a step did in the rounds a gate's revise ended (review s11 MCP #7:
after a revise the trace showed only the last round: ``work`` with one attempt and one dispatch
while the run spent four; the earlier attempts and their failures were only in raw events)."""

from __future__ import annotations

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
    assert [r["status"] for r in trace["review"]["earlier_rounds"]] == ["waiting_gate", "waiting_gate"]
    assert "earlier_rounds" not in trace["publish"]  # reset twice, but it only ran in the last round
