"""A task whose reference cannot be rendered says what happened to the step it reads (it failed,
was skipped), not only that the value is unavailable."""

from __future__ import annotations

from lockgate.engine import Engine

SPEC = """
version: 1
contracts:
  V: {v: string}
flows:
  entry: main
  main:
    input: {t: string}
    output: {from: "${after.output}", contract: V}
    steps:
      - id: a
        do: "a ${input.t}"
        out: V
        attempts: 1
        on_fail: rescue
      - id: rescue
        do: "rescue"
        out: V
      - id: after
        after: [a, rescue]
        do: "after ${a.output.v}"
        out: V
        attempts: 1
"""


def test_a_reference_to_a_failed_step_names_its_failure() -> None:
    engine = Engine()
    first = engine.plan(SPEC, {"t": "x"})
    rescue = engine.step_done(first["run_id"], "a", {"wrong": 1}, first["token"])
    assert rescue["step_id"] == "rescue"
    ended = engine.step_done(first["run_id"], "rescue", {"v": "r"}, rescue["token"])
    assert ended["status"] == "error" and ended["step_id"] == "after"
    assert ended["message"].startswith("task render failed: reference ${a.output.v} is unavailable: step a failed: "
                                       "output does not match contract V"), ended["message"]
