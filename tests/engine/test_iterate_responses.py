"""A round of an ``iterate`` step whose ``until`` does not hold yet is no rejection (semantics
§6.4 step 8: the step is dispatched again): ``step_done`` answers ``execute_step`` with the next
round's dispatch and ``iterated {step_id, round, max, until, reason}``, never ``ensure_failed``
with no retries left; real failures of an iterating step are still ``ensure_failed``, and the
runner's progress stream tells a round from a failure, also in a subflow."""

from __future__ import annotations

import textwrap
from typing import Any

import lockgate
from lockgate.engine import Engine
from lockgate.engine.agents import Task

SPEC = """
version: 1
contracts:
  V: {v: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: V}
    steps:
      - id: a
        do: "improve"
        out: V
        ensure:
          - expr: "result.v > 0"
        iterate: {max: 3, until: "result.v >= 10"}
"""

SUB = """
version: 1
contracts:
  V: {v: integer}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${sub.output}", contract: V}
    steps:
      - id: sub
        run: child
        with: {}
  child:
    input: {}
    output: {from: "${a.output}", contract: V}
    steps:
      - id: a
        do: "improve"
        out: V
        iterate: {max: 3, until: "result.v >= 10"}
"""

UNTIL = "result.v >= 10"


def report(engine: Engine, response: dict[str, Any], v: int) -> dict[str, Any]:
    return engine.step_done(response["run_id"], response["step_id"], {"v": v}, response["token"])


def test_a_round_whose_until_does_not_hold_dispatches_the_next_round() -> None:
    engine = Engine()
    first = engine.plan(SPEC, {})
    assert first["iteration"] == 1 and first["iterate_max"] == 3
    second = report(engine, first, 1)
    assert second["status"] == "execute_step"
    assert second["iterated"] == {"step_id": "a", "round": 1, "max": 3, "until": UNTIL,
                                  "reason": "predicate evaluated to false"}
    assert second["step_id"] == "a" and second["iteration"] == 2 and second["token"] != first["token"]
    assert second["ready"][0]["token"] == second["token"]
    assert not {"failed_step", "failure", "violations"} & second.keys()
    assert second["previous_failure"]["kind"] == "iterate"  # what the agent improves on
    third = report(engine, second, 2)
    assert third["status"] == "execute_step" and third["iterated"]["round"] == 2 and third["iteration"] == 3
    last = report(engine, third, 3)
    assert last["status"] == "error" and last["error_type"] == "retries_exhausted"
    assert "(iterate max 3 reached)" in last["message"] and "iterated" not in last


def test_the_round_that_holds_completes_and_status_shows_no_round_report() -> None:
    engine = Engine()
    second = report(engine, engine.plan(SPEC, {}), 1)
    assert "iterated" not in engine.status(second["run_id"])  # only the call that ended the round says so
    done = report(engine, second, 12)
    assert done["status"] == "complete" and done["output"] == {"v": 12} and "iterated" not in done


def test_an_ensure_failure_of_an_iterating_step_is_still_a_rejection() -> None:
    engine = Engine()
    rejected = report(engine, engine.plan(SPEC, {}), 0)
    assert rejected["status"] == "ensure_failed" and rejected["failed_step"] == "a"
    assert rejected["retries_remaining"] == 0 and "iterated" not in rejected


def test_identical_output_still_ends_the_iteration() -> None:
    engine = Engine()
    second = report(engine, engine.plan(SPEC, {}), 1)
    stopped = report(engine, second, 1)
    assert stopped["status"] == "error" and "identical evidence" in stopped["message"]


def test_a_round_in_a_subflow_names_the_child_step() -> None:
    engine = Engine()
    first = engine.plan(SUB, {})
    assert first["step_id"] == "sub/a"
    second = report(engine, first, 4)
    assert second["status"] == "execute_step" and second["step_id"] == "sub/a"
    assert second["iterated"]["step_id"] == "sub/a" and second["iterated"]["round"] == 1


def test_the_runner_reports_rounds_as_going_round_again_not_as_failures() -> None:
    values = iter([1, 5, 11])

    def agent(task: Task) -> dict[str, int]:
        return {"v": next(values)}

    result = lockgate.run_sync(textwrap.dedent(SUB), {}, agents={"claude": agent}, store="memory")
    assert result.status == "complete" and result.output == {"v": 11}
    assert not [e for e in result.events if e.kind == "step_failed"]
    rounds = [(e.step_id, e.attempt, e.message) for e in result.events if e.kind == "step_retrying"]
    assert rounds == [("sub/a", 2, f"round 1 of 3 done: until {UNTIL!r} does not hold yet"),
                      ("sub/a", 3, f"round 2 of 3 done: until {UNTIL!r} does not hold yet")]
