"""A ``when`` that raises at run time skips its step (reference §5.7), and the skip says the
error: "is not true" is kept for a condition that evaluated to something other than true."""

from __future__ import annotations

from lockgate.engine import Engine

SPEC = """
version: 1
contracts:
  R: {v: string}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${a.output}", contract: R}
    steps:
      - {id: a, do: "write", out: R}
      - {id: broken, after: [a], do: "x", out: R, when: "input.topic > 1"}
      - {id: false_, after: [a], do: "y", out: R, when: "input.topic == 'other'"}
"""


def _skip_reasons(engine: Engine, run: str) -> dict[str, str]:
    events = engine.audit(run)["events"]
    return {e["step_id"]: e["detail"]["reason"] for e in events if e["type"] == "skipped"}


def test_an_erroring_when_skips_its_step_and_names_the_error():
    engine = Engine()
    run = engine.plan(SPEC, {"topic": "t"})["run_id"]
    ready = {e["step_id"]: e for e in engine.status(run)["ready"]}
    done = engine.step_done(run, "a", {"v": "x"}, ready["a"]["token"])
    assert done["status"] == "complete"
    assert _skip_reasons(engine, run) == {
        "broken": "when \"input.topic > 1\" failed: type_error: '>' needs two numbers or two strings, "
                  "received string and number",
        "false_": "when \"input.topic == 'other'\" is not true",
    }
