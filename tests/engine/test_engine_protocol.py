"""The consumer protocol: refusals, response shapes, token fencing, cancel, why, listings."""

from __future__ import annotations

import pytest
from engine_support import Script, drive

from lockgate.dsl.loader import load
from lockgate.engine import Engine
from lockgate.errors import EngineError, InputValidationError, SpecError, StaleToken

PARALLEL = """
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      topic: string
      count: integer?
    output:
      from: "${join.output}"
      contract: Note
    steps:
      - id: left
        do: "Left side of ${input.topic}"
        out: Note
      - id: right
        do: "Right side of ${input.topic}"
        agent: codex
        out: Note
        ensure:
          - expr: "len(result.text) > 3"
      - id: check
        after: [left, right]
        gate:
          on_approve: null
          on_revise: null
          on_kill: null
      - id: join
        after: [check]
        do: "Join ${left.output.text} and ${right.output.text}"
        out: Note
"""


def test_plan_lists_every_step_that_can_run_at_once(engine: Engine) -> None:
    first = engine.plan(PARALLEL, {"topic": "tea"})
    assert first["status"] == "execute_step"
    assert [r["step_id"] for r in first["ready"]] == ["left", "right"]
    right = first["ready"][1]
    assert right["agent"] == "codex" and right["ensure"] == ["len(result.text) > 3"]
    assert right["output_schema"]["properties"] == {"text": {"type": "string"}}
    assert right["step_number"] == 2 and right["total_steps"] == 4
    assert right["inputs"] == {"${input.topic}": "tea"}
    assert first["token"] == first["ready"][0]["token"] != right["token"]


def test_gate_response_carries_its_token_and_routes(engine: Engine) -> None:
    first = engine.plan(PARALLEL, {"topic": "tea"})
    run = first["run_id"]
    for entry in first["ready"]:
        last = engine.step_done(run, entry["step_id"], {"text": "some text"}, entry["token"])
    assert last["status"] == "await_gate"
    assert last["step_id"] == "check" and last["gate_token"] == last["token"]
    assert last["routes"] == {"approve": None, "revise": None, "kill": None}
    assert engine.pending_gates()[0]["step_id"] == "check"
    why = engine.why(run)
    assert why["waits"][0]["commands"][0].startswith(f"lockgate gate approve {run} check")


def test_invalid_spec_is_refused_with_its_diagnostics(engine: Engine) -> None:
    with pytest.raises(SpecError) as caught:
        engine.plan(PARALLEL.replace("after: [check]", "after: [nowhere]"), {"topic": "tea"})
    assert any("nowhere" in d.message for d in caught.value.diagnostics)
    assert engine.runs() == []


def test_plan_accepts_a_loaded_spec_and_a_path(engine: Engine, tmp_path) -> None:
    path = tmp_path / "flow.stratum.yaml"
    path.write_text(PARALLEL)
    assert engine.plan(path, {"topic": "a"})["status"] == "execute_step"
    assert engine.plan(str(path), {"topic": "a"})["status"] == "execute_step"
    assert engine.plan(load(PARALLEL).spec, {"topic": "a"})["status"] == "execute_step"


@pytest.mark.parametrize("inputs, path", [
    ({}, "input.topic"),
    ({"topic": 3}, "input.topic"),
    ({"topic": "a", "count": 1.5}, "input.count"),
    ({"topic": "a", "extra": True}, "input.extra"),
])
def test_inputs_are_validated_strictly_before_a_run_exists(engine: Engine, inputs, path) -> None:
    with pytest.raises(InputValidationError) as caught:
        engine.plan(PARALLEL, inputs)
    assert caught.value.error_type == "input_validation_failed"
    assert path in [v["path"] for v in caught.value.detail["violations"]]
    assert engine.runs() == []


def test_unknown_flow_is_refused(engine: Engine) -> None:
    with pytest.raises(EngineError) as caught:
        engine.plan(PARALLEL, {"topic": "a"}, flow="other")
    assert caught.value.error_type == "unknown_flow"


def _state(engine: Engine, run: str) -> tuple[int, int]:
    return engine.store.current_version(run), len(engine.store.events(run))


def test_stale_duplicate_foreign_and_missing_tokens_change_nothing(engine: Engine) -> None:
    first = engine.plan(PARALLEL, {"topic": "tea"})
    run = first["run_id"]
    right = first["ready"][1]
    retry = engine.step_done(run, "right", {"text": "no"}, right["token"])
    assert retry["status"] == "ensure_failed" and retry["step_id"] == "right"
    assert retry["retries_remaining"] == 0 and retry["violations"][0]["ensure"] == "len(result.text) > 3"
    before = _state(engine, run)
    with pytest.raises(StaleToken) as stale:
        engine.step_done(run, "right", {"text": "long enough"}, right["token"])
    assert stale.value.detail["reason"] == "stale"
    other = engine.plan(PARALLEL, {"topic": "coffee"})
    with pytest.raises(StaleToken):
        engine.step_done(run, "left", {"text": "long enough"}, other["token"])
    with pytest.raises(StaleToken) as missing:
        engine.step_done(run, "left", {"text": "long enough"}, None)
    assert missing.value.detail["reason"] == "missing"
    with pytest.raises(EngineError) as unknown:
        engine.step_done(run, "nope", {}, retry["token"])
    assert unknown.value.error_type == "unknown_step"
    assert _state(engine, run) == before
    engine.step_done(run, "right", {"text": "long enough"}, retry["token"])
    after = _state(engine, run)
    with pytest.raises(StaleToken) as duplicate:
        engine.step_done(run, "right", {"text": "long enough"}, retry["token"])
    assert duplicate.value.detail["reason"] == "duplicate"
    assert _state(engine, run) == after


def test_a_gate_cannot_be_resolved_with_a_dispatch_call_or_a_bad_decision(engine: Engine) -> None:
    first = engine.plan(PARALLEL, {"topic": "tea"})
    run = first["run_id"]
    for entry in first["ready"]:
        gate = engine.step_done(run, entry["step_id"], {"text": "some text"}, entry["token"])
    with pytest.raises(EngineError) as wrong_call:
        engine.step_done(run, "check", {}, gate["token"])
    assert wrong_call.value.error_type == "not_awaiting"
    with pytest.raises(EngineError) as bad:
        engine.gate_resolve(run, "check", "maybe", "", "human", gate["token"])
    assert bad.value.error_type == "invalid_decision"
    with pytest.raises(StaleToken):
        engine.gate_resolve(run, "check", "approve", "", "human", first["token"])
    nxt = engine.gate_resolve(run, "check", "approve", "fine", "human", gate["token"])
    assert nxt["status"] == "execute_step" and nxt["step_id"] == "join"
    assert nxt["task"] == "Join some text and some text"


def test_schema_failure_then_exhaustion_is_a_retries_exhausted_error(engine: Engine) -> None:
    first = engine.plan(PARALLEL, {"topic": "tea"})
    run = first["run_id"]
    bad = engine.step_done(run, "left", {"text": 5}, first["token"])
    assert bad["status"] == "schema_failed" and bad["step_id"] == "left"
    assert bad["violations"] == [{"path": "result.text", "message": bad["violations"][0]["message"]}]
    assert bad["previous_failure"]["kind"] == "schema"
    final = engine.step_done(run, "left", {"text": 6, "more": 1}, bad["token"])
    assert final["status"] == "error" and final["error_type"] == "retries_exhausted"
    assert final["step_id"] == "left" and len(final["violations"]) == 2
    with pytest.raises(EngineError) as finished:
        engine.step_done(run, "right", {"text": "long enough"}, first["ready"][1]["token"])
    assert finished.value.error_type == "run_finished"


def test_cancel_burns_tokens_and_refuses_everything_after(engine: Engine) -> None:
    first = engine.plan(PARALLEL, {"topic": "tea"})
    run = first["run_id"]
    assert engine.cancel(run) == {"status": "cancelled", "run_id": run, "flow": "main", "spent": {"dispatches": 2}}
    with pytest.raises(EngineError) as refused:
        engine.step_done(run, "left", {"text": "abcd"}, first["token"])
    assert refused.value.error_type == "run_cancelled"
    with pytest.raises(EngineError):
        engine.resume(run)
    with pytest.raises(EngineError):
        engine.commit(run, "x")
    assert engine.cancel(run)["reason"] == "already_cancelled"
    assert [r["status"] for r in engine.runs()] == ["cancelled"]


def test_complete_response_has_output_trace_and_duration(engine: Engine) -> None:
    run = engine.plan(PARALLEL, {"topic": "tea"})["run_id"]
    done = drive(engine, run, Script({"left": [{"text": "L!!!"}], "right": [{"text": "R!!!"}],
                                      "join": lambda e: {"text": e["task"]}}))
    assert done["status"] == "complete"
    assert done["output"] == {"text": "Join L!!! and R!!!"}
    assert [t["step_id"] for t in done["trace"]] == ["left", "right", "check", "join"]
    assert done["total_duration_ms"] >= 0
    audit = engine.audit(run)
    assert audit["steps_completed"] == 4 and audit["events"][0]["type"] == "planned"
    assert engine.verify(run)["ok"] is True
    assert engine.why(run)["summary"].endswith("is complete; nothing to unblock")


def test_resolve_waiting_gate_uses_the_current_token_and_refuses_other_steps():
    from pathlib import Path

    from lockgate.dsl.loader import load
    from lockgate.engine import Engine
    from lockgate.errors import EngineError

    text = (Path(__file__).resolve().parents[2] / "examples" / "reviewed-work.stratum.yaml").read_text()
    engine = Engine()
    first = engine.plan(load(text).spec, {"text": "x"})
    run_id = first["run_id"]
    with pytest.raises(EngineError) as refused:
        engine.resolve_waiting_gate(run_id, "review", "approve")
    assert refused.value.error_type == "not_awaiting" and "waiting gates: none" in refused.value.message
    engine.step_done(run_id, "work", {"result": "r", "quality_score": 0.9}, first["token"])
    done = engine.resolve_waiting_gate(run_id, "review", "approve", "fine", "cli")
    assert done["status"] == "complete"
    assert engine.audit(run_id)["trace"][1]["decisions"][0]["resolved_by"] == "cli"


def test_a_spec_file_that_is_not_text_is_a_spec_error(tmp_path) -> None:
    binary = tmp_path / "noise.yaml"
    binary.write_bytes(bytes(range(128, 256)) * 3)
    with pytest.raises(SpecError, match="not UTF-8"):
        Engine().plan(binary, {})
    with pytest.raises(SpecError, match="no such file"):
        Engine().plan(tmp_path / "missing.yaml", {})


def test_a_step_that_awaits_nothing_says_so_before_asking_for_a_token() -> None:
    """Refusals come in the order of semantics §6.4: the step's status before the token."""
    engine = Engine()
    first = engine.plan(PARALLEL, {"topic": "t"})
    with pytest.raises(EngineError) as refused:
        engine.step_done(first["run_id"], "join", {"text": "x"}, None)
    assert refused.value.error_type == "not_awaiting"
    with pytest.raises(StaleToken, match="missing dispatch token"):
        engine.step_done(first["run_id"], "left", {"text": "x"}, None)
