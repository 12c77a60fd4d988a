"""Arguments of the wrong type or holding text no store keeps get a clear error naming the
argument, and change nothing: a run id or step id that is not a string (a list would not even
hash), a gate decision's rationale or decider and a checkpoint label holding U+0000 or a lone
surrogate (what a command line's bytes that are not UTF-8 become), a label too long to keep."""

from __future__ import annotations

import pytest
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.store import open_store
from lockgate.errors import EngineError, LockgateError, StoreError

SPEC = note_flow("""      - {id: write, agent: writer, do: "write", out: Note}
      - id: review
        after: [write]
        gate: {on_approve: null, on_revise: null, on_kill: null}
""", output="write")


# a judged ensure after the gate: a decision is held on the gate before it is applied (with a
# judge), so its text must be refused before anything is held
JUDGED_AFTER = SPEC.replace("        gate: {on_approve: null, on_revise: null, on_kill: null}\n",
                            "        gate: {on_approve: null, on_revise: null, on_kill: null}\n"
                            "      - id: judged\n        after: [review]\n        set: {text: \"'done'\"}\n"
                            "        out: Note\n        ensure: [{judged: {statement: fine}}]\n")


@pytest.fixture(params=["no judge", "judged"])
def at_gate(request):
    judged = request.param == "judged"
    engine = Engine(judge=(lambda *args: {"holds": True, "reason": "ok"}) if judged else None)
    plan = engine.plan(JUDGED_AFTER if judged else SPEC, {})
    engine.step_done(plan["run_id"], "write", {"text": "t"}, plan["token"])
    yield engine, plan["run_id"]
    engine.close()


@pytest.mark.parametrize("run_id", [["r"], {"r": 1}, 5, None])
@pytest.mark.parametrize("call", ["status", "audit", "why", "cancel", "resume", "verify"])
def test_a_run_id_that_is_not_a_string_is_refused_by_name(at_gate, call, run_id):
    engine, _ = at_gate
    with pytest.raises(StoreError, match=f"run id must be a string, not {type(run_id).__name__}"):
        getattr(engine, call)(run_id)


@pytest.mark.parametrize("step_id", [["write"], {"write": 1}, 5, None])
def test_a_step_id_that_is_not_a_string_is_refused_by_name(at_gate, step_id):
    engine, run_id = at_gate
    version = engine.store.current_version(run_id)
    calls = [lambda: engine.step_done(run_id, step_id, {"text": "t"}, "token"),
             lambda: engine.gate_resolve(run_id, step_id, "approve", token="token"),
             lambda: engine.resolve_waiting_gate(run_id, step_id, "approve")]
    for call in calls:
        with pytest.raises(EngineError, match=f"a step id is a string, not {type(step_id).__name__}") as raised:
            call()
        assert raised.value.error_type == "invalid_arguments"
    assert engine.store.current_version(run_id) == version


@pytest.mark.parametrize(("field", "text", "message"), [
    ("rationale", "ok\0", r"the decision's rationale holds the character U\+0000"),
    ("rationale", "caf\udce9", "the decision's rationale is not valid Unicode: it holds a lone surrogate"),
    ("resolved_by", "\ud800", r"who decided \(resolved_by\) is not valid Unicode"),
])
def test_decision_text_no_store_keeps_is_refused_by_name(at_gate, field, text, message):
    engine, run_id = at_gate
    version = engine.store.current_version(run_id)
    with pytest.raises(EngineError, match=message) as raised:
        engine.resolve_waiting_gate(run_id, "review", "approve", **{field: text})
    assert raised.value.error_type == "invalid_arguments"
    assert engine.store.current_version(run_id) == version  # nothing held, nothing changed
    assert engine.resolve_waiting_gate(run_id, "review", "approve", **{field: "fine"})["status"] == "complete"


@pytest.mark.parametrize(("label", "message"), [
    ("v\0", r"a checkpoint label holds the character U\+0000"),
    ("v\udcff", "a checkpoint label is not valid Unicode"),
    ("x" * 997, "a checkpoint label is 997 bytes long in UTF-8; it may have at most 996"),
])
def test_a_label_no_store_keeps_is_refused_by_name(at_gate, label, message):
    engine, run_id = at_gate
    with pytest.raises(LockgateError, match=message):
        engine.commit(run_id, label)
    assert engine.commit(run_id, "x" * 996)["label"] == "x" * 996


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_listing_runs_by_a_status_no_store_keeps_is_refused_by_name(tmp_path, where):
    engine = Engine(store=open_store("memory" if where == "memory" else tmp_path / "s.db"))
    with pytest.raises(StoreError, match="the status to list is not valid Unicode"):
        engine.runs(status="\ud800")
    assert engine.runs(status="caf\u00e9") == [] and engine.runs(status="a\0") == []
    engine.close()
