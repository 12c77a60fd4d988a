"""The engine's own words for two refusals every front end shows (CLI, notebook, MCP host):
a gate decision on a run that ended says how the run ended (not "waiting gates: none"), and a
spec path that does not exist is "no such file: X" (not a raw ``[Errno 2]``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lockgate.dsl.loader import load
from lockgate.engine.engine import Engine
from lockgate.errors import EngineError, SpecError

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${work.output}", contract: Note}
    max_rounds: 1
    steps:
      - id: work
        do: "work"
        agent: writer
        out: Note
      - id: review
        after: [work]
        gate: {on_approve: null, on_revise: work, on_kill: null}
"""


def at_gate(engine: Engine) -> str:
    """A new run whose gate ``review`` waits for a decision."""
    first = engine.plan(load(SPEC).spec, {})
    engine.step_done(first["run_id"], "work", {"text": "draft"}, first["token"])
    return first["run_id"]


def revise_past_the_limit(engine: Engine, run_id: str) -> None:
    """Revise once (the flow's one round), then again: semantics §6.7, the second revise is
    taken and fails the run."""
    again = engine.resolve_waiting_gate(run_id, "review", "revise", "again")
    engine.step_done(run_id, "work", {"text": "redraft"}, again["token"])
    engine.resolve_waiting_gate(run_id, "review", "revise", "once more")


def refusal(engine: Engine, run_id: str, step_id: str = "review") -> EngineError:
    with pytest.raises(EngineError) as refused:
        engine.resolve_waiting_gate(run_id, step_id, "approve", "late")
    return refused.value


@pytest.mark.parametrize(("end", "said"), [
    (lambda engine, run: engine.cancel(run), "was cancelled"),
    (lambda engine, run: engine.resolve_waiting_gate(run, "review", "kill"), "was killed"),
    (lambda engine, run: engine.resolve_waiting_gate(run, "review", "approve"), "is complete"),
    (revise_past_the_limit, "failed ("),
])
def test_a_decision_on_a_run_that_ended_says_how_it_ended(end: Callable[[Engine, str], Any], said: str) -> None:
    engine = Engine()
    run_id = at_gate(engine)
    end(engine, run_id)
    refused = refusal(engine, run_id)
    assert refused.error_type == "not_awaiting"
    assert refused.message.startswith(f"run {run_id} {said}")
    assert "; its gates take no more decisions" in refused.message


def test_a_failed_run_names_its_error_type() -> None:
    engine = Engine()
    run_id = at_gate(engine)
    revise_past_the_limit(engine, run_id)
    error_type = engine.status(run_id)["error_type"]
    assert refusal(engine, run_id).message == (f"run {run_id} failed ({error_type}); "
                                               "its gates take no more decisions (gate review's last decision: "
                                               "revise by human: once more); your approve was not applied")


def test_a_decision_that_lost_to_one_that_ended_the_run_says_which_won() -> None:
    engine = Engine()
    run_id = at_gate(engine)
    engine.resolve_waiting_gate(run_id, "review", "approve", "ship it", "carol")
    with pytest.raises(EngineError) as refused:
        engine.resolve_waiting_gate(run_id, "review", "revise", "shorter", "bob")
    assert refused.value.message == (f"run {run_id} is complete; its gates take no more decisions (gate review's "
                                     "last decision: approve by carol: ship it); your revise was not applied")


def test_a_run_cancelled_before_its_gate_was_decided_names_no_decision() -> None:
    engine = Engine()
    run_id = at_gate(engine)
    engine.cancel(run_id)
    assert refusal(engine, run_id).message.endswith("; its gates take no more decisions")


def test_a_running_run_still_names_the_gates_that_wait() -> None:
    engine = Engine()
    run_id = at_gate(engine)
    assert refusal(engine, run_id, "work").message == (f"step work of run {run_id} is not a waiting gate "
                                                       "(waiting gates: review)")


def test_a_decision_that_lost_to_another_persons_says_which_won() -> None:
    """Two people decide the same gate from two terminals: the second is told what the first
    decided, and that their own decision (with its note) was not applied."""
    engine = Engine()
    run_id = at_gate(engine)
    again = engine.resolve_waiting_gate(run_id, "review", "revise", "tighten the intro", "carol")
    with pytest.raises(EngineError) as refused:
        engine.resolve_waiting_gate(run_id, "review", "revise", "shorter", "bob")
    assert refused.value.error_type == "not_awaiting"
    assert refused.value.message == (f"gate review of run {run_id} is not waiting for a decision (its last: revise "
                                     "by carol: tighten the intro); your revise was not applied and nothing "
                                     "changed (waiting gates: none)")
    assert again["step_id"] == "work"


def test_a_missing_spec_file_is_no_such_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(SpecError) as refused:
        Engine().plan(missing, {})
    assert str(refused.value) == f"no such file: {missing}"
    with pytest.raises(SpecError, match=f"^no such file: {missing}$"):
        Engine().plan(str(missing), {})


def test_other_unreadable_spec_paths_keep_their_reason(tmp_path: Path) -> None:
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    with pytest.raises(SpecError) as refused:
        Engine().plan(folder, {})
    assert str(refused.value).startswith(f"cannot read spec {folder}: [Errno")
