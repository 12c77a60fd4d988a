"""A result reported to a spec that may ask a judge is held on its step first, in a transaction
of its own: a process stopped while the judge answers loses nothing reported. The dispatch is
then described with the result to report again (``reported``), not as work to redo."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.engine import Engine

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${write.output}", contract: Note}
    steps:
      - id: write
        agent: writer
        do: "write"
        out: Note
        ensure:
          - judged: {statement: "the note is written"}
"""


class Stopped(BaseException):
    """The process stopping while the judge answers (a kill, Ctrl-C)."""


def test_a_result_is_held_before_the_judge_is_asked_and_reported_again_after_a_stop() -> None:
    verdicts: list[Any] = []

    def judge(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
        verdicts.append(result)
        if len(verdicts) == 1:
            raise Stopped
        return {"holds": True, "reason": "written"}

    engine = Engine(judge=judge)
    plan = engine.plan(SPEC, {})
    with pytest.raises(Stopped):
        engine.step_done(plan["run_id"], "write", {"text": "done"}, plan["token"], usage={"tokens": 7})
    engine = Engine(store=engine.store, judge=judge)  # the run as a new process finds it
    status = engine.status(plan["run_id"])
    assert status["status"] == "execute_step" and status["token"] == plan["token"]
    assert status["reported"] == {"result": {"text": "done"}, "usage": {"tokens": 7}}
    done = engine.step_done(plan["run_id"], "write", status["reported"]["result"], status["token"],
                            usage=status["reported"]["usage"])
    assert done["status"] == "complete" and verdicts == [{"text": "done"}, {"text": "done"}]
    (trace,) = engine.audit(plan["run_id"])["trace"]
    assert "parked" not in str(trace) and "reported" not in engine.status(plan["run_id"])


def test_a_spec_without_judged_ensures_writes_no_extra_transaction() -> None:
    engine = Engine()
    plan = engine.plan(SPEC.replace("        ensure:\n          - judged: {statement: \"the note is written\"}\n", ""), {})
    engine.step_done(plan["run_id"], "write", {"text": "done"}, plan["token"])
    assert engine.audit(plan["run_id"])["version"] == 2


FANOUT = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${last.output}", contract: Note}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "say ${item}"
              out: Note
              ensure:
                - judged: {statement: "polite"}
      - id: last
        after: [fan]
        set: {text: "'done'"}
        out: Note
"""


def test_an_engine_dispatcher_reports_a_held_item_again_without_running_it(tmp_path) -> None:
    from lockgate.engine.store import open_store

    calls: list[str] = []
    questions: list[Any] = []

    def dispatcher(entry: dict[str, Any]) -> dict[str, Any]:
        calls.append(entry["step_id"])
        return {"text": "hi " + entry["step_id"]}

    def judge(statement: str, stakes: str, result: Any, input: Any) -> dict[str, Any]:
        questions.append(result)
        if len(questions) == 2:
            raise Stopped
        return {"holds": True, "reason": "polite"}

    with pytest.raises(Stopped):
        Engine(store=open_store(tmp_path / "runs.db"), judge=judge, dispatcher=dispatcher).plan(FANOUT, {"items": ["a", "b"]})
    engine = Engine(store=open_store(tmp_path / "runs.db"), judge=judge, dispatcher=dispatcher)
    (summary,) = engine.runs()
    assert engine.resume(summary["run_id"])["status"] == "complete"
    assert sorted(calls) == ["fan/0", "fan/1"]  # each item ran once


def test_a_reported_failure_is_held_without_its_result() -> None:
    """A failure is what counts when both come: an unstorable result beside it changes nothing."""
    engine = Engine(judge=lambda *args: {"holds": True, "reason": "ok"})
    plan = engine.plan(SPEC, {})
    out = engine.step_done(plan["run_id"], "write", {"text": float("nan")}, plan["token"], failure="could not")
    assert out["status"] == "ensure_failed" and out["failure"]["reason"] == "agent reported failure: could not"
