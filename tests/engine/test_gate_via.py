"""A gate decision's audit event records the surface it came through (``decided_via``) when the
caller says it (``resolved_by`` is only what the caller claims); the Python API's default keeps
none. A decision held for a judge keeps its surface until it is applied."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.engine import Engine
from lockgate.engine.store import MemoryStore
from lockgate.errors import EngineError

SPEC = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${w.output}", contract: Note}
    steps:
      - id: w
        do: "write"
        out: Note
        ensure: [{judged: {statement: "fine"}}]
      - id: g
        after: [w]
        gate: {on_approve: null, on_revise: null, on_kill: null}
"""


def holds(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
    return {"holds": True, "reason": "fine"}


def at_gate(engine: Engine) -> tuple[str, dict[str, Any]]:
    """A run waiting at gate g; its step w is judged (so decisions are held first) when the
    engine has a judge."""
    spec = SPEC if engine.judge is not None else SPEC.replace('ensure: [{judged: {statement: "fine"}}]', "")
    plan = engine.plan(spec, {})
    return plan["run_id"], engine.step_done(plan["run_id"], "w", {"text": "hello"}, plan["token"])


def resolved(engine: Engine, run_id: str) -> dict[str, Any]:
    [event] = [e for e in engine.audit(run_id)["events"] if e["type"] == "gate_resolved"]
    return event["detail"]


@pytest.mark.parametrize("judge", [None, holds], ids=["plain", "held-for-a-judge"])
def test_the_surface_a_decision_came_through_is_in_its_audit_event(judge: Any) -> None:
    engine = Engine(store=MemoryStore(), judge=judge)
    run_id, gate = at_gate(engine)
    engine.gate_resolve(run_id, "g", "approve", "ok", "human", gate["token"], via="mcp")
    assert resolved(engine, run_id) == {"decided_via": "mcp", "decision": "approve", "target": None,
                                        "rationale": "ok", "resolved_by": "human"}
    assert engine.verify(run_id)["ok"] is True


def test_the_python_api_records_no_surface_unless_told() -> None:
    engine = Engine(store=MemoryStore())
    run_id, _ = at_gate(engine)
    engine.resolve_waiting_gate(run_id, "g", "kill", "no", "ana")
    assert "decided_via" not in resolved(engine, run_id)
    run_id, _ = at_gate(engine)
    engine.resolve_waiting_gate(run_id, "g", "approve", "yes", "ana", via="notebook")
    assert resolved(engine, run_id)["decided_via"] == "notebook"


def test_a_surface_is_a_short_word() -> None:
    engine = Engine(store=MemoryStore())
    run_id, gate = at_gate(engine)
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(run_id, "g", "approve", "ok", "human", gate["token"], via="m c p")
    assert refused.value.error_type == "invalid_arguments"
    assert engine.status(run_id)["status"] == "await_gate"
