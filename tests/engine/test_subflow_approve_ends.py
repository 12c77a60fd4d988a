"""A null ``on_approve`` completes the gate at the root (its dependents run, Lockgate's reading of
the source document) but ends a subflow at once (semantics §6.7). When that leaves the subflow
without its output, the run step's failure says the approval ended the subflow before its output
was produced, and what became of the output step, rather than only "output is unavailable"."""

from __future__ import annotations

import textwrap

import lockgate
from lockgate.engine.drive import RunResult
from lockgate.engine.gatechannel import CallbackGates

CHILD = """
  child:
    input: {}
    output: {from: "${w.output}", contract: V}
    steps:
      - id: d
        do: "draft"
        out: V
      - id: g
        after: [d]
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: w
        after: [g]
        do: "write"
        out: V
"""
HEAD = """
version: 1
contracts:
  V: {v: string}
flows:
  entry: ENTRY
"""
MAIN = """
  main:
    input: {}
    output: {from: "${sub.output}", contract: V}
    steps:
      - id: sub
        run: child
        with: {}
"""


def run_flow(entry: str) -> RunResult:
    """``child`` run as the entry flow, or called by ``main`` as a subflow."""
    spec = textwrap.dedent(HEAD.replace("ENTRY", entry)) + (MAIN if entry == "main" else "") + CHILD
    return lockgate.run_sync(spec, {}, agents={"claude": lambda task: {"v": task.step_id}},
                             gates=CallbackGates(lambda request: "approve"), store="memory")


def test_at_the_root_the_approve_completes_the_gate_and_the_output_step_runs() -> None:
    result = run_flow("child")
    assert result.status == "complete" and result.output == {"v": "w"}


def test_in_a_subflow_the_failure_says_the_approve_ended_it_before_its_output() -> None:
    result = run_flow("main")
    assert result.status == "error"
    assert result.response["message"] == ("approving gate g (on_approve: null) ended subflow child before its output "
                                          "${w.output} was produced (step w has not run yet)")
