"""An evaluate command never runs inside a transaction: the transition that makes its step ready
commits first (the step marked running under a token), the command runs, and its answer is
settled in a transaction of its own, fenced by that token. So other processes see the result
that released the command while it runs, a cancel meanwhile discards its answer, and ``resume``
(or a ``revert``) starts a running command again under a new token."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lockgate.engine import Engine
from lockgate.engine.drivers import Driver
from lockgate.engine.evaluate import Evaluated, deferred
from lockgate.engine.store import open_store
from lockgate.errors import EngineError, RunDriven, StaleToken

CLOSED = {"status": "closed", "children": [], "reason": "ok"}
SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${fin.output}", contract: Note}
    steps:
      - {id: a, agent: claude, do: a, out: Note}
      - {id: b, agent: claude, do: "b after ${a.output.text}", out: Note, after: [a]}
      - id: check
        after: [a]
        evaluate: {command: "check it", in: "${a.output.text}", timeout_ms: 5000}
      - {id: fin, after: [check, b], agent: claude, do: fin, out: Note}
"""
#: seconds after which a test that should take milliseconds fails rather than hangs (a guard:
#: nothing waits for it to pass)
GUARD_S = 30


class Held:
    """An evaluator that answers ``closed`` once released, and says when it has started."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        self.inputs: list[Any] = []

    def __call__(self, command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        self.inputs.append(value)
        self.started.set()
        assert self.release.wait(GUARD_S), "the test never released the command"
        return {"ok": True, "result": CLOSED}


def answered(reason: str = "ok") -> Evaluated:
    return Evaluated({"ok": True, "result": {**CLOSED, "reason": reason}}, None, 1.0)


def closing() -> Engine:
    """An engine whose evaluator answers ``closed`` at once."""
    return Engine(evaluator=lambda *args: {"ok": True, "result": CLOSED})


def started(engine: Engine, spec: str = SPEC) -> tuple[str, dict[str, Any]]:
    """(run id, the response) once ``a``'s result started ``check``, in a deferred call (as the
    runner makes them: the command is left to the caller, which has not run it)."""
    plan = engine.plan(spec, {})
    with deferred():
        return plan["run_id"], engine.step_done(plan["run_id"], "a", {"text": "A"}, plan["token"])


@pytest.fixture
def two_engines(tmp_path):
    """An engine whose evaluator is held, and another process's view of the same SQLite store."""
    held = Held()
    first = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=held)
    second = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    yield first, second, held
    held.release.set()
    first.close()
    second.close()


def step_done_in_thread(engine: Engine, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["response"] = engine.step_done(*args)
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=call)
    thread.start()
    return thread, box


def test_the_result_that_releases_a_command_is_committed_before_it_runs(two_engines):
    first, second, held = two_engines
    plan = first.plan(SPEC, {})
    run_id = plan["run_id"]
    thread, box = step_done_in_thread(first, run_id, "a", {"text": "A"}, plan["token"])
    assert held.started.wait(GUARD_S)
    seen = second.status(run_id)  # another process, while the command runs
    assert [e["step_id"] for e in seen["evaluating"]] == ["check"]
    assert seen["status"] == "execute_step" and [e["step_id"] for e in seen["ready"]] == ["b"]
    (a,) = [t for t in second.audit(run_id)["trace"] if t["step_id"] == "a"]
    assert a["status"] == "succeeded" and a["output"] == {"text": "A"}
    (wait,) = [w for w in second.why(run_id)["waits"] if w["kind"] == "evaluate"]
    # the process running the command holds the run meanwhile (a resume elsewhere is refused: it
    # would start the command a second time), and only that: the resume is for once it ends
    assert wait["command"] == "check it"
    assert wait["commands"] == [f"lockgate run --resume {run_id}", f"lockgate cancel {run_id}"]
    assert "on this host is running it" in wait["reason"]
    assert "once that ends, resume the run to continue with agents" in second.why(run_id)["summary"]
    with pytest.raises(RunDriven):
        second.claim(run_id, Driver.here())
    held.release.set()
    thread.join(GUARD_S)
    response = box["response"]
    # the caller hears about everything its call started: b (first transaction) as well
    assert response["status"] == "execute_step" and [e["step_id"] for e in response["ready"]] == ["b"]
    assert "evaluating" not in response and "evaluate" not in response
    assert held.inputs == ["A"]
    types = [e["type"] for e in second.audit(run_id)["events"]]
    assert types.index("evaluate_started") < types.index("evaluated")
    assert second.driver_of(run_id) is None  # given up with the commands done


def test_a_cancel_while_the_command_runs_discards_its_answer(two_engines):
    first, second, held = two_engines
    plan = first.plan(SPEC, {})
    run_id = plan["run_id"]
    thread, box = step_done_in_thread(first, run_id, "a", {"text": "A"}, plan["token"])
    assert held.started.wait(GUARD_S)
    cancelled = second.cancel(run_id, "changed my mind")
    assert cancelled["status"] == "cancelled"
    held.release.set()
    thread.join(GUARD_S)
    assert box["response"]["status"] == "cancelled"
    events = second.audit(run_id)["events"]
    assert "evaluated" not in [e["type"] for e in events]
    (burned,) = [e["detail"]["burned"] for e in events if e["type"] == "flow_cancelled"]
    assert "check" in burned


def test_resume_starts_a_running_command_again_under_a_new_token():
    engine = closing()
    run_id, out = started(engine)
    (call,) = out["evaluate"]
    assert (call["step_id"], call["command"], call["input"], call["timeout_ms"]) == ("check", "check it", "A", 5000)
    with deferred():  # the process running it died: a resume starts it again
        resumed = engine.resume(run_id)
    (again,) = resumed["evaluate"]
    assert again["token"] != call["token"]
    with pytest.raises(StaleToken) as stale:
        engine.evaluated(run_id, "check", call["token"], answered("from the old process"))
    assert stale.value.detail["reason"] == "stale"
    settled = engine.evaluated(run_id, "check", again["token"], answered("from the resume"))
    assert "evaluating" not in settled
    with pytest.raises(StaleToken, match="duplicate"):
        engine.evaluated(run_id, "check", again["token"], answered())
    (check,) = [t for t in engine.audit(run_id)["trace"] if t["step_id"] == "check"]
    assert check["output"]["reason"] == "from the resume"


def test_without_deferral_resume_runs_the_command_itself():
    calls = []
    engine = Engine(evaluator=lambda *args: calls.append(args) or {"ok": True, "result": CLOSED})
    run_id, _ = started(engine)
    resumed = engine.resume(run_id)
    assert len(calls) == 1 and "evaluating" not in resumed and "evaluate" not in resumed
    assert resumed["status"] == "execute_step" and [e["step_id"] for e in resumed["ready"]] == ["b"]
    assert resumed["digest"]


def test_an_answer_for_a_step_that_runs_no_command_is_refused():
    engine = Engine()
    plan = engine.plan(SPEC, {})
    with pytest.raises(EngineError) as refused:
        engine.evaluated(plan["run_id"], "a", plan["token"], answered())
    assert refused.value.error_type == "not_awaiting"
    with pytest.raises(EngineError) as unknown:
        engine.evaluated(plan["run_id"], "nope", "t", answered())
    assert unknown.value.error_type == "unknown_step"


def test_revert_to_a_checkpoint_taken_while_a_command_ran_starts_it_again():
    engine = closing()
    run_id, out = started(engine)
    (call,) = out["evaluate"]
    engine.commit(run_id, "mid-check")
    engine.evaluated(run_id, "check", call["token"], answered("first"))
    with deferred():
        reverted = engine.revert(run_id, "mid-check")
    (again,) = reverted["evaluate"]
    assert again["token"] != call["token"] and reverted["reverted_to"] == "mid-check"
    engine.evaluated(run_id, "check", again["token"], answered("after the revert"))
    (check,) = [t for t in engine.audit(run_id)["trace"] if t["step_id"] == "check"]
    assert check["output"]["reason"] == "after the revert"


def test_a_run_whose_only_work_is_a_running_command_says_evaluating():
    engine = closing()
    spec = SPEC.replace('      - {id: b, agent: claude, do: "b after ${a.output.text}", out: Note, after: [a]}\n', "")
    run_id, out = started(engine, spec.replace("after: [check, b]", "after: [check]"))
    assert out["status"] == "evaluating" and [e["step_id"] for e in out["evaluating"]] == ["check"]
    assert engine.status(run_id)["status"] == "evaluating"
    settled = engine.evaluated(run_id, "check", out["evaluate"][0]["token"], answered())
    assert settled["status"] == "execute_step" and settled["step_id"] == "fin"


def test_a_commands_time_is_charged_to_the_flows_ms_budget():
    spec = SPEC.replace("    input: {}\n", "    input: {}\n    budget: {ms: 100}\n")
    for took, status in ((60.0, "execute_step"), (150.0, "error")):
        engine = closing()
        run_id, out = started(engine, spec)
        settled = engine.evaluated(run_id, "check", out["evaluate"][0]["token"],
                                   Evaluated({"ok": True, "result": CLOSED}, None, took))
        assert settled["status"] == status and engine.audit(run_id)["spent"]["ms"] == took
    assert settled["error_type"] == "budget_exhausted"


@pytest.mark.parametrize("answer", [None, {"ok": True}, Evaluated(None, None, float("nan")),
                                    Evaluated(None, None, -1.0), Evaluated(None, None, "5")])
def test_an_answer_that_is_not_one_is_refused_changing_nothing(answer):
    engine = Engine()
    run_id, out = started(engine)
    with pytest.raises(EngineError) as refused:
        engine.evaluated(run_id, "check", out["evaluate"][0]["token"], answer)
    assert refused.value.error_type == "invalid_arguments"
    assert [e["step_id"] for e in engine.status(run_id)["evaluating"]] == ["check"]


GATED = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Note}
    max_rounds: 5
    steps:
      - {id: a, agent: claude, do: a, out: Note}
      - id: check
        after: [a]
        evaluate: {command: "check it", in: "${a.output.text}", timeout_ms: 5000}
      - id: review
        after: [a]
        gate: {on_approve: null, on_revise: a, on_kill: null}
"""


def test_an_answer_for_a_step_reset_while_its_command_ran_is_stale():
    engine = closing()
    run_id, out = started(engine, GATED)
    (gate,) = engine.status(run_id)["gates"]
    engine.gate_resolve(run_id, "review", "revise", "again", "alice", gate["token"])  # resets a and check
    with pytest.raises(StaleToken) as stale:
        engine.evaluated(run_id, "check", out["evaluate"][0]["token"], answered())
    assert stale.value.detail["reason"] == "stale" and stale.value.detail["step_status"] == "pending"
    with pytest.raises(StaleToken, match="missing token"):
        engine.evaluated(run_id, "check", None, answered())


def test_a_call_whose_command_step_was_reset_meanwhile_answers_with_the_run_as_it_is(tmp_path):
    """The engine runs the command itself; meanwhile another process revises the gate that reset
    its step. The call's own result was committed: it answers with the current state."""
    other = Engine(store=open_store(tmp_path / "runs.db"))

    def revising(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        (summary,) = other.runs()
        (gate,) = other.status(summary["run_id"])["gates"]
        other.gate_resolve(summary["run_id"], "review", "revise", "again", "bob", gate["token"])
        return {"ok": True, "result": CLOSED}

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=revising)
    plan = engine.plan(GATED, {})
    out = engine.step_done(plan["run_id"], "a", {"text": "A"}, plan["token"])
    assert out["status"] == "execute_step" and out["step_id"] == "a" and out["token"] != plan["token"]


def test_resume_where_the_workspace_is_missing_is_refused_failing_nothing(tmp_path):
    workspace = tmp_path / "elsewhere"
    workspace.mkdir()
    planned = Engine(store=open_store(tmp_path / "runs.db"), workspace=workspace)
    run_id, _ = started(planned)
    workspace.rmdir()  # as on a teammate's machine sharing the store
    here = Engine(store=open_store(tmp_path / "runs.db"))
    with pytest.raises(EngineError) as refused:
        here.resume(run_id)
    assert refused.value.error_type == "workspace_missing"
    assert [e["step_id"] for e in here.status(run_id)["evaluating"]] == ["check"]


def test_resuming_a_failed_run_starts_no_command():
    engine = closing()
    spec = SPEC.replace("- {id: b, agent: claude", "- {id: b, agent: claude, ensure: [{expr: 'false'}], attempts: 1")
    run_id, out = started(engine, spec)
    failed = engine.step_done(run_id, "b", {"text": "B"}, out["ready"][0]["token"])
    assert failed["status"] == "error"
    resumed = engine.resume(run_id)
    assert resumed["status"] == "error" and "evaluate" not in resumed
    assert [e["type"] for e in engine.audit(run_id)["events"]].count("evaluate_started") == 1


def test_a_command_may_not_run_past_the_ms_budget_left(tmp_path):
    import time

    spec = SPEC.replace("    input: {}\n", "    input: {}\n    budget: {ms: 300}\n").replace(
        'command: "check it"', 'command: "sleep 30"').replace("timeout_ms: 5000", "timeout_ms: 60000")
    engine = Engine(workspace=tmp_path)  # the built-in runner: /bin/sh -c
    plan = engine.plan(spec, {})
    started = time.monotonic()
    out = engine.step_done(plan["run_id"], "a", {"text": "A"}, plan["token"])
    assert time.monotonic() - started < 20  # cut at the budget (0.3 s), not the step's 60 s
    assert out["status"] == "error" and out["error_type"] == "budget_exhausted"
    (ran,) = [e for e in engine.audit(plan["run_id"])["events"] if e["type"] == "evaluated"]
    assert ran["detail"]["outcome"] == "timeout"
