"""Gate decisions held on the gate while their transition may ask a judge (Engine.gate_resolve):
a decision the gate refuses is not left held, the first decision of a round stands against a
different one, and a process reading a run another drives is told who does."""

from __future__ import annotations

from typing import Any

import pytest
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.drivers import Driver
from lockgate.engine.store import MemoryStore
from lockgate.errors import EngineError, StaleToken

# w is judged (so decisions are held); a revise of g carries side's output, which is unavailable
# until side runs after g: that revise is refused (carry_revise_unresolved), changing nothing
SPEC = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {t: string}
    output: {from: "${w.output}", contract: Note}
    max_rounds: 3
    carry:
      guidance:
        initial: "${input.t}"
        on_revise:
          g: "${side.output.text}"
    steps:
      - id: w
        do: "write ${guidance}"
        out: Note
        ensure:
          - judged: {statement: "the text is fine"}
      - {id: side, after: [g], do: "side", out: Note}
      - id: g
        after: [w]
        gate: {on_approve: null, on_revise: w, on_kill: null}
"""


def holds(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
    return {"holds": True, "reason": "fine"}


def at_gate(engine: Engine) -> tuple[str, dict[str, Any]]:
    plan = engine.plan(SPEC, {"t": "x"})
    return plan["run_id"], engine.step_done(plan["run_id"], "w", {"text": "hello"}, plan["token"])


def test_a_decision_the_gate_refuses_is_not_left_held():
    engine = Engine(store=MemoryStore(), judge=holds)
    run_id, gate = at_gate(engine)
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(run_id, "g", "revise", "redo", "ana", gate["token"])
    assert refused.value.error_type == "carry_revise_unresolved"
    (waiting,) = engine.status(run_id)["gates"]
    assert waiting["token"] == gate["token"] and "decided" not in waiting
    assert "was decided" not in engine.why(run_id)["waits"][0]["reason"]
    approved = engine.gate_resolve(run_id, "g", "approve", "fine", "ana", gate["token"])
    assert approved["status"] == "execute_step" and approved["step_id"] == "side"


def test_the_first_decision_held_for_a_round_stands_against_a_different_one():
    engine = Engine(store=MemoryStore(), judge=holds)
    run_id, gate = at_gate(engine)
    # ana's approve was held, then her process died before it was applied
    engine._park_decision(run_id, "g", "approve", "ship it", "ana", gate["token"])
    with pytest.raises(StaleToken, match="already decided for this token: approve by ana \\(ship it\\)") as lost:
        engine.gate_resolve(run_id, "g", "kill", "no", "bob", gate["token"])
    assert lost.value.detail["reason"] == "decided"
    assert engine.status(run_id)["gates"][0]["decided"]["resolved_by"] == "ana"
    done = engine.gate_resolve(run_id, "g", "approve", "me too", "bob", gate["token"])
    assert done["status"] == "execute_step" and done["step_id"] == "side"
    (g,) = [t for t in engine.audit(run_id)["trace"] if t["step_id"] == "g"]
    assert [(d["decision"], d["resolved_by"], d["rationale"]) for d in g["decisions"]] == [
        ("approve", "ana", "ship it")]


def test_a_decision_refused_as_another_held_leaves_that_one_held():
    engine = Engine(store=MemoryStore(), judge=holds)
    run_id, gate = at_gate(engine)
    engine._park_decision(run_id, "g", "approve", "ship it", "ana", gate["token"])
    with pytest.raises(StaleToken):
        engine.gate_resolve(run_id, "g", "revise", "redo", "bob", gate["token"])
    assert engine.status(run_id)["gates"][0]["decided"] == {"outcome": "approve", "rationale": "ship it",
                                                            "resolved_by": "ana"}


def test_every_response_that_hands_out_work_says_who_drives_the_run():
    store = MemoryStore()
    driving, consumer = Engine(store=store), Engine(store=store)
    gated = note_flow("""      - {id: w, do: "write", out: Note}
      - {id: g, after: [w], gate: {on_approve: null, on_revise: w, on_kill: null}}
""", output="w", max_rounds=3)
    plan = driving.plan(gated, {}, driver=Driver.here())
    run_id = plan["run_id"]
    gate = driving.step_done(run_id, "w", {"text": "hello"}, plan["token"])
    assert "driven_by" not in gate
    revised = consumer.gate_resolve(run_id, "g", "revise", "again", "me", gate["token"])
    assert revised["status"] == "execute_step" and revised["driven_by"].startswith("process ")
    assert "driven_by" in consumer.step_done(run_id, "w", {"text": "v2"}, revised["token"])
