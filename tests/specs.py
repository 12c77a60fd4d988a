"""Spec texts that tests of several areas (engine, MCP, ...) share; import them by name
(``from specs import fan_spec``): tests/conftest.py puts this folder on the import path."""

from __future__ import annotations


def fan_spec(*, require: str = "all", dispatch: str = "consumer", concurrency: int = 2,
             isolation: str = "none", stages: str | None = None, pre_merge: str = "") -> str:
    """A flow fanning out over ``input.words`` (contract Word); by default each item is one stage
    that must echo its word (``stages`` replaces it, ``pre_merge`` adds that block)."""
    stages = stages or """            - do: "Shout ${item}"
              out: Word
              ensure:
                - expr: "result.word == item"
"""
    return f"""
version: 1
contracts:
  Word:
    word: string
  Words:
    first: Word?
flows:
  entry: main
  main:
    input:
      words: string[]
    output:
      from: "${{fan.output[0]}}"
      contract: Word
    steps:
      - id: fan
        attempts: 2
        fanout:
          over: "${{input.words}}"
          concurrency: {concurrency}
          isolation: {isolation}
          require: {require}
          merge: sequential
          dispatch: {dispatch}
{pre_merge}          steps:
{stages}"""


def note_flow(steps: str, *, output: str, max_rounds: int | None = None, contract: str = "Note") -> str:
    """A flow with no input over contracts Note (``{text: string}``) and Verdict (an evaluate
    command's answer) whose output is step ``output``'s, of ``contract``; ``steps`` are its
    YAML list items, each line indented six spaces."""
    rounds = f"    max_rounds: {max_rounds}\n" if max_rounds else ""
    return f"""version: 1
contracts:
  Note: {{text: string}}
  Verdict: {{status: string, children: array, reason: string}}
flows:
  entry: main
  main:
    input: {{}}
{rounds}    output: {{from: "${{{output}.output}}", contract: {contract}}}
    steps:
{steps}"""


#: A flow whose step ``work`` (contract Work, from input ``text``) is reviewed by gate ``review``,
#: which may send it back (two rounds at most).
REVIEWED = """
version: 1
contracts:
  Work:
    result: string
flows:
  entry: reviewed
  reviewed:
    input:
      text: string
    output:
      from: "${work.output}"
      contract: Work
    max_rounds: 2
    steps:
      - id: work
        do: "Do ${input.text}"
        out: Work
      - id: review
        after: [work]
        gate:
          on_approve: null
          on_revise: work
          on_kill: null
"""

# A flow whose carry takes its on_revise value from a step that input.deep false skips: a revise
# of gate g then cannot resolve it (the engine refuses the revise, the gate keeps waiting).
CARRIED = """
version: 1
contracts:
  Plan: {tasks: "string[]"}
  R: {v: string}
flows:
  entry: main
  main:
    input: {deep: boolean}
    output: {from: "${work.output}", contract: R}
    max_rounds: 3
    carry:
      wave:
        initial: "${plan.output.tasks}"
        on_revise:
          g: "${assess.output.tasks}"
    steps:
      - id: plan
        do: "plan"
        out: Plan
      - id: work
        after: [plan]
        do: "work on ${wave}"
        out: R
      - id: assess
        after: [work]
        when: "input.deep"
        do: "assess"
        out: Plan
      - id: g
        after: [assess, work]
        gate: {on_approve: null, on_revise: work, on_kill: null}
"""
