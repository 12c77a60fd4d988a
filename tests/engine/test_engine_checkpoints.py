"""Checkpoints: commit and revert restore state (not spend), re-mint tokens, revive finished runs."""

from __future__ import annotations

import pytest
from engine_support import Script, drive
from specs import fan_spec

from lockgate.engine import Engine
from lockgate.errors import EngineError, StaleToken

SPEC = """
version: 1
contracts:
  Note:
    text: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${b.output}"
      contract: Note
    steps:
      - id: a
        do: "a ${input.topic}"
        out: Note
      - id: b
        do: "b after ${a.output.text}"
        out: Note
"""


def test_commit_reports_the_position_and_labels(engine: Engine) -> None:
    first = engine.plan(SPEC, {"topic": "t"})
    run = first["run_id"]
    committed = engine.commit(run, "  start ")
    assert committed == {"status": "committed", "run_id": run, "label": "start", "step_number": 1,
                         "current_step_id": "a", "checkpoints": ["start"]}
    engine.step_done(run, "a", {"text": "x"}, first["token"])
    assert engine.commit(run, "after-a")["current_step_id"] == "b"
    assert engine.commit(run, "start")["checkpoints"] == ["start", "after-a"]


def test_revert_restores_steps_remints_tokens_and_keeps_spend(engine: Engine) -> None:
    first = engine.plan(SPEC, {"topic": "t"})
    run = first["run_id"]
    engine.commit(run, "start")
    second = engine.step_done(run, "a", {"text": "x"}, first["token"])
    reverted = engine.revert(run, "start")
    assert reverted["reverted_to"] == "start" and reverted["step_id"] == "a"
    assert reverted["token"] != first["token"]
    with pytest.raises(StaleToken):
        engine.step_done(run, "a", {"text": "x"}, first["token"])
    with pytest.raises(EngineError):
        engine.step_done(run, "b", {"text": "y"}, second["token"])
    assert engine.audit(run)["spent"]["dispatches"] == 2
    done = drive(engine, run, Script({"a": [{"text": "again"}], "b": lambda e: {"text": e["task"]}}))
    assert done["output"] == {"text": "b after again"}


def test_reverting_a_finished_run_brings_it_back(engine: Engine) -> None:
    first = engine.plan(SPEC, {"topic": "t"})
    run = first["run_id"]
    nxt = engine.step_done(run, "a", {"text": "x"}, first["token"])
    engine.commit(run, "before-b")
    assert engine.step_done(run, "b", {"text": "done"}, nxt["token"])["status"] == "complete"
    revived = engine.revert(run, "before-b")
    assert revived["status"] == "execute_step" and revived["step_id"] == "b"
    assert engine.step_done(run, "b", {"text": "redo"}, revived["token"])["output"] == {"text": "redo"}


def test_checkpoint_refusals(engine: Engine) -> None:
    run = engine.plan(SPEC, {"topic": "t"})["run_id"]
    with pytest.raises(EngineError) as blank:
        engine.commit(run, "   ")
    assert blank.value.error_type == "invalid_label"
    engine.commit(run, "one")
    with pytest.raises(EngineError) as missing:
        engine.revert(run, "two")
    assert missing.value.error_type == "checkpoint_not_found" and missing.value.detail["available"] == ["one"]
    engine.cancel(run)
    with pytest.raises(EngineError) as cancelled:
        engine.revert(run, "one")
    assert cancelled.value.error_type == "flow_cancelled"


def test_checkpoints_are_refused_while_a_fanout_is_in_flight(engine: Engine) -> None:
    spec = SPEC.replace('''      - id: b
        do: "b after ${a.output.text}"
        out: Note''', '''      - id: fan
        fanout:
          over: "${input.topics}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "t ${item}"
              out: Note
      - id: b
        do: "b after ${a.output.text}"
        after: [fan]
        out: Note''').replace("topic: string", "topic: string\n      topics: string[]")
    run = engine.plan(spec, {"topic": "t", "topics": ["x", "y"]})["run_id"]
    with pytest.raises(EngineError) as caught:
        engine.commit(run, "mid")
    assert caught.value.error_type == "fanout_in_flight"


def test_checkpoints_survive_a_new_engine(tmp_path) -> None:
    from lockgate.engine.store import open_store

    db = tmp_path / "cp.db"
    engine = Engine(store=open_store(db))
    first = engine.plan(SPEC, {"topic": "t"})
    engine.commit(first["run_id"], "start")
    engine.step_done(first["run_id"], "a", {"text": "x"}, first["token"])
    engine.close()
    again = Engine(store=open_store(db))
    assert again.revert(first["run_id"], "start")["step_id"] == "a"


def test_checkpoints_wait_for_the_successor_gate_of_a_consumer_worktree_fanout(engine: Engine) -> None:
    spec = fan_spec(isolation="worktree") + """      - id: review
        after: [fan]
        gate:
          on_approve: null
          on_revise: null
          on_kill: null
"""
    first = engine.plan(spec, {"words": ["a", "b"]})
    run = first["run_id"]
    for entry in first["ready"]:
        word = entry["task"].split()[-1]  # "Shout <item>": the ensure wants the item back
        gate = engine.step_done(run, entry["step_id"], {"word": word}, entry["token"])
    assert gate["status"] == "await_gate"
    with pytest.raises(EngineError, match="successor gate") as caught:
        engine.commit(run, "mid")
    assert caught.value.error_type == "fanout_in_flight"
    with pytest.raises(EngineError, match="successor gate"):
        engine.revert(run, "anything")
    engine.gate_resolve(run, "review", "approve", "merged", "me", gate["token"])
    assert engine.commit(run, "after")["status"] == "committed"


RETRYING = SPEC.replace('        do: "a ${input.topic}"\n        out: Note\n',
                        '        do: "a ${input.topic}"\n        out: Note\n        attempts: 5\n')


def test_a_checkpoint_is_not_changed_by_what_the_run_does_after_it(engine: Engine) -> None:
    """The snapshot is a copy: attempts made after the commit are not in it, live or reloaded,
    and a second revert to the same label restores the same state."""
    first = engine.plan(RETRYING, {"topic": "t"})
    run = first["run_id"]
    retry = engine.step_done(run, "a", None, first["token"], failure="one")
    engine.commit(run, "after-one")
    for reason in ("two", "three"):
        retry = engine.step_done(run, "a", None, retry["token"], failure=reason)
    for _ in range(2):
        reverted = engine.revert(run, "after-one")
        assert reverted["step_id"] == "a" and reverted["attempt"] == 2
        engine.step_done(run, "a", None, reverted["token"], failure="again")


GATED_CARRY = """
version: 1
contracts:
  N:
    t: string
flows:
  entry: main
  main:
    input: {}
    max_rounds: 1
    carry:
      w: {initial: "${src.output.t}"}
    output: {from: "${use.output}", contract: N}
    steps:
      - id: src
        do: "src"
        out: N
      - id: use
        after: [src]
        do: "use ${w}"
        out: N
      - id: g
        after: [use]
        gate: {on_approve: null, on_revise: src, on_kill: null}
"""


def test_revert_restores_rounds_carry_and_failure_at_their_defaults(engine: Engine) -> None:
    """Fields at their defaults when committed (no rounds, no carry, no failure) come back too
    (semantics §6.14 restores every snapshot field)."""
    first = engine.plan(GATED_CARRY, {})
    run = first["run_id"]
    engine.commit(run, "start")
    use = engine.step_done(run, "src", {"t": "FIRST"}, first["token"])
    gate = engine.step_done(run, "use", {"t": "u"}, use["token"])
    engine.gate_resolve(run, "g", "revise", "again", "me", gate["token"])
    assert engine.audit(run)["rounds"] == 1
    reverted = engine.revert(run, "start")
    audit = engine.audit(run)
    assert audit["rounds"] == 0 and audit["carry"] == {}
    use = engine.step_done(run, "src", {"t": "SECOND"}, reverted["token"])
    assert use["task"] == "use SECOND"
    gate = engine.step_done(run, "use", {"t": "u"}, use["token"])
    assert engine.gate_resolve(run, "g", "revise", "once more", "me", gate["token"])["status"] == "execute_step"


def test_reverting_a_failed_run_clears_its_failure(engine: Engine) -> None:
    first = engine.plan(SPEC, {"topic": "t"})
    run = first["run_id"]
    second = engine.step_done(run, "a", {"text": "x"}, first["token"])
    engine.commit(run, "before-b")
    for _ in range(2):
        second = engine.step_done(run, "b", None, second["token"], failure="boom")
        if second["status"] == "error":
            break
    assert engine.audit(run)["status"] == "failed"
    engine.revert(run, "before-b")
    audit = engine.audit(run)
    assert audit["status"] == "running"
    assert (audit["failure"], audit["error_type"], audit["finished_at"]) == (None, None, None)
