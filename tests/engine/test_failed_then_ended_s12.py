"""A step whose failure is routed to its on_fail step, in a transition that then ends the run
for another reason (the flow's output is not there), is reported failed by the progress events
(`lockgate run` printed "succeeded build"), and the error response lists it in
``failed_steps`` (review s12b F4). A real runner with a Python agent."""

from __future__ import annotations

from lockgate.engine import Engine
from lockgate.engine.agents import Task
from lockgate.engine.runner import run

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${publish.output}", contract: Note}
    steps:
      - {id: build, do: "build", agent: w, out: Note, attempts: 1, on_fail: fix}
      - {id: test, after: [build], do: "test", agent: w, out: Note}
      - {id: fix, after: [test], do: "fix", agent: w, out: Note}
      - {id: publish, after: [fix], do: "publish", agent: w, out: Note}
"""


async def test_the_progress_says_the_step_failed() -> None:
    def w(task: Task) -> dict:
        raise RuntimeError("red")

    events = []
    result = await run(SPEC, {"topic": "t"}, agents={"w": w}, store="memory", on_event=events.append)
    assert result.status == "error"
    outcomes = [(e.kind, e.step_id) for e in events if e.step_id == "build"]
    assert outcomes == [("step_started", "build"), ("step_failed", "build")]
    [failed] = [e for e in events if e.kind == "step_failed"]
    assert "RuntimeError: red" in failed.message


def test_the_error_response_names_the_step_that_failed() -> None:
    engine = Engine()
    first = engine.plan(SPEC, {"topic": "t"})
    ended = engine.step_done(first["run_id"], "build", None, first["token"], failure="red")
    assert ended["status"] == "error" and ended["step_id"] != "build"
    assert ended["failed_steps"] == {"build": "agent reported failure: red"}
