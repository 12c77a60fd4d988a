"""A child gate approving with a null ``on_approve`` completes its subflow at once (semantics
§6.7): the run step's output is the subflow's output as it stands, checked as at any completion,
and child work still outstanding is withdrawn. At the root the same approve only completes the
gate (Lockgate's reading of the source document), so its dependents still run."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.engine import Engine
from lockgate.errors import EngineError

SPEC = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {t: string}
    output: {from: "${after.output}", contract: Note}
    steps:
      - id: child
        run: sub
        with: {t: "${input.t}"}
        on_fail: rescue
      - id: rescue
        do: "rescue"
        out: Note
      - id: after
        after: [child]
        do: "after ${child.output.text}"
        out: Note
  sub:
    input: {t: string}
    output: {from: "${SOURCE.output}", contract: Note}
    steps:
      - id: a
        do: "a ${input.t}"
        out: Note
      - id: side
        do: "side"
        out: Note
      - id: ok
        after: [a]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: more
        after: [ok]
        do: "more"
        out: Note
"""


def _ready(engine: Engine, run: str) -> dict[str, dict[str, Any]]:
    return {e["step_id"]: e for e in engine.status(run).get("ready", [])}


def _at_child_gate(engine: Engine, source: str) -> str:
    run = engine.plan(SPEC.replace("SOURCE", source), {"t": "x"})["run_id"]
    engine.step_done(run, "child/a", {"text": "from a"}, _ready(engine, run)["child/a"]["token"])
    return run


def _approve(engine: Engine, run: str, step: str) -> dict[str, Any]:
    gate = next(g for g in engine.status(run)["gates"] if g["step_id"] == step)
    return engine.gate_resolve(run, step, "approve", "enough", "test", gate["token"])


def _trace(engine: Engine, run: str) -> dict[str, dict[str, Any]]:
    return {t["step_id"]: t for t in engine.audit(run)["trace"]}


def test_a_null_approve_in_a_subflow_completes_it_with_its_output_as_it_stands() -> None:
    engine = Engine()
    run = _at_child_gate(engine, "a")
    side = _ready(engine, run)["child/side"]
    resp = _approve(engine, run, "child/ok")
    assert list(_ready(engine, run)) == ["after"] and _ready(engine, run)["after"]["task"] == "after from a"
    trace = _trace(engine, run)
    assert trace["child"]["status"] == "succeeded" and trace["child"]["output"] == {"text": "from a"}
    assert trace["child/side"]["status"] == "skipped" and trace["child/more"]["status"] == "pending"
    events = engine.audit(run)["events"]
    assert [e["detail"] for e in events if e["type"] == "subflow_completed"] == [{"early": True}]
    assert [e["detail"]["reason"] for e in events if e["type"] == "skipped" and e["step_id"] == "child/side"] == [
        "the subflow ended"]
    with pytest.raises(EngineError) as late:
        engine.step_done(run, "child/side", {"text": "late"}, side["token"])
    assert late.value.error_type == "not_awaiting"
    assert resp["status"] == "execute_step"
    done = engine.step_done(run, "after", {"text": "end"}, _ready(engine, run)["after"]["token"])
    assert done["status"] == "complete" and done["output"] == {"text": "end"}


def test_an_early_subflow_output_that_is_not_there_yet_fails_the_run_step() -> None:
    engine = Engine()
    run = _at_child_gate(engine, "more")
    _approve(engine, run, "child/ok")
    trace = _trace(engine, run)
    assert trace["child"]["status"] == "failed"
    assert trace["child"]["failure"]["reason"] == "approving gate ok (on_approve: null) ended subflow sub before its output ${more.output} was produced (step more has not run yet)"
    assert trace["rescue"]["status"] == "ready" and trace["child/more"]["status"] == "pending"
    engine.step_done(run, "rescue", {"text": "r"}, _ready(engine, run)["rescue"]["token"])
    assert _trace(engine, run)["after"]["status"] == "skipped"  # its dependency failed and was routed


def test_a_null_approve_at_the_root_still_lets_the_gates_dependents_run() -> None:
    engine = Engine()
    spec = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${last.output}", contract: Note}
    steps:
      - id: ok
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: last
        after: [ok]
        set: {text: "'after the gate'"}
        out: Note
"""
    run = engine.plan(spec, {})["run_id"]
    done = _approve(engine, run, "ok")
    assert done["status"] == "complete" and done["output"] == {"text": "after the gate"}
