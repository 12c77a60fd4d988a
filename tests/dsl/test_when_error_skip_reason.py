"""A ``when`` that raises at run time skips its step (reference §5.7), and the skip says the
error: "is not true" is kept for a condition that evaluated to something other than true."""

from __future__ import annotations

from lockgate.engine import Engine

def spec(steps: str, *, inputs: str = "{topic: string}", output: str = "${a.output}", out: str = "R") -> str:
    """A one-flow spec with contracts R (a string v) and N (a number n) around ``steps``."""
    return ("version: 1\ncontracts:\n  R: {v: string}\n  N: {n: number}\nflows:\n  entry: main\n  main:\n"
            f"    input: {inputs}\n    output: {{from: \"{output}\", contract: {out}}}\n    steps:\n{steps}")


SPEC = spec("""\
      - {id: a, do: "write", out: R}
      - {id: broken, after: [a], do: "x", out: R, when: "input.topic > 1"}
      - {id: false_, after: [a], do: "y", out: R, when: "input.topic == 'other'"}
""")


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


def test_an_erroring_stage_when_skips_the_item_and_names_the_error():
    text = spec("""\
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 1
          isolation: none
          require: any
          merge: sequential
          dispatch: consumer
          steps: [{do: "x ${item}", out: R, when: "input.topic > 1"}]
""", inputs="{topic: string, items: 'string[]'}", output="${fan.output[0]}")
    engine = Engine()
    resp = engine.plan(text, {"topic": "t", "items": ["a"]})
    events = engine.audit(resp["run_id"])["events"]
    skipped = [e["detail"]["reason"] for e in events if e["type"] == "fanout_item_skipped"]
    assert skipped == ["when \"input.topic > 1\" failed: type_error: '>' needs two numbers or two strings, "
                       "received string and number"]


def test_a_set_value_that_errors_is_false_and_the_failure_says_why():
    """Reference §5.7: a set value whose expression fails is false, which then usually fails the
    out contract; the failure names the expression's error first, not only the contract's."""
    text = spec("""\
      - {id: a, do: "write", out: R}
      - {id: s, after: [a], set: {n: "10 / (len(input.topic) - 1)"}, out: N}
""", output="${s.output}", out="N")
    engine = Engine()
    run = engine.plan(text, {"topic": "t"})["run_id"]
    done = engine.step_done(run, "a", {"v": "x"}, engine.status(run)["token"])
    assert (done["status"], done["step_id"]) == ("error", "s")
    assert done["message"] == (
        'set step s failed: set value n "10 / (len(input.topic) - 1)" failed (type_error: division by zero), '
        "so it is false; output does not match contract N: result.n: expected number, found boolean false")
