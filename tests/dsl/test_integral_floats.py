"""An integral float where the language wants an integer (``attempts: 2.0``) is that integer:
JSON Schema lets it through, as JavaScript reads it, so the IR must not drop it."""

import pytest

from lockgate.dsl.loader import load

SPEC = """version: 1
contracts: {R: {v: string}}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${s.output}", contract: R}
    max_rounds: 3.0
    steps:
      - id: s
        agent: claude
        do: x
        out: R
        attempts: 1.0
        budget: {dispatches: 4.0}
      - id: e
        after: [s]
        evaluate: {command: "true", timeout_ms: 1000.0}
      - id: fan
        after: [e]
        fanout:
          over: "${input.items}"
          concurrency: 2.0
          require: 1.0
          isolation: none
          merge: sequential
          steps:
            - {do: "${item}", agent: claude, attempts: 3.0}
"""


@pytest.fixture(scope="module")
def flow():
    result = load(SPEC)
    assert result.ok, result.diagnostics
    return result.spec.flows["main"]


def test_integral_floats_are_the_integers_they_spell(flow):
    steps = {step.id: step for step in flow.steps}
    assert flow.max_rounds == 3 and steps["s"].attempts == 1 and steps["s"].budget.dispatches == 4
    assert steps["e"].evaluate.timeout_ms == 1000
    fan = steps["fan"].fanout
    assert (fan.concurrency, fan.require, fan.stages[0].attempts) == (2, 1, 3)
    assert all(type(v) is int for v in (flow.max_rounds, steps["s"].attempts, fan.require, fan.concurrency))
