"""A revise the gate cannot take is refused, changing nothing, with the gate still waiting on the
same token: a gate with no ``on_revise`` target (``revise_unavailable``; it failed the run as
"gate revision rounds exhausted" with no round used), and a revise whose carry ``on_revise``
value cannot be resolved (``carry_revise_unresolved``, semantics §6.7 step 3; it crashed
``lockgate.run_sync``). The runner tells whoever decided and asks again without revise: a
terminal prompt asks the person again, a callback gets a request that no longer offers revise,
and answering revise again leaves the gate waiting (the result says why). A revise past a round
limit still fails the run (semantics §6.7)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from click.testing import CliRunner
from specs import CARRIED

import lockgate
from lockgate.cli import main
from lockgate.engine import Engine
from lockgate.engine.gatechannel import CallbackGates, GateRequest, TerminalGates
from lockgate.engine.store import open_store
from lockgate.errors import EngineError

NO_TARGET = textwrap.dedent("""
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
            do: "a"
            out: V
          - id: g
            after: [a]
            gate: {on_approve: null, on_revise: null, on_kill: null}
    """)

IN_SUBFLOW = textwrap.dedent("""
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
            do: "a"
            out: V
          - id: g
            after: [a]
            gate: {on_approve: null, on_revise: null, on_kill: null}
    """)


UNRESOLVED = ("carry_revise_unresolved: ${assess.output.tasks} for carry 'wave' is unavailable (step assess was "
              "skipped); the gate is still waiting")


def carried_agent(task: Any) -> dict[str, Any]:
    if task.step_id == "plan":
        return {"tasks": ["t1"]}
    return {"v": task.prompt} if task.step_id == "work" else {"tasks": ["r"]}


def at_gate(engine: Engine, spec: str, step: str = "a") -> dict[str, Any]:
    first = engine.plan(spec, {})
    return engine.step_done(first["run_id"], step, {"v": 1}, first["token"])


def test_a_revise_of_a_gate_without_on_revise_is_refused_changing_nothing() -> None:
    engine = Engine()
    gate = at_gate(engine, NO_TARGET)
    assert gate["status"] == "await_gate" and gate["decisions"] == ["approve", "kill"]
    run, version = gate["run_id"], engine.audit(gate["run_id"])["version"]
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(run, "g", "revise", "again", "ana", gate["token"])
    assert refused.value.error_type == "revise_unavailable"
    assert refused.value.detail["decisions"] == ["approve", "kill"]
    assert "has no on_revise target" in refused.value.message and "approve or kill" in refused.value.message
    assert engine.audit(run)["version"] == version
    assert engine.status(run)["token"] == gate["token"]
    done = engine.gate_resolve(run, "g", "approve", "fine", "ana", gate["token"])
    assert done["status"] == "complete" and done["output"] == {"v": 1}


def test_the_refusal_holds_in_a_subflow_too() -> None:
    engine = Engine()
    gate = at_gate(engine, IN_SUBFLOW, "sub/a")
    assert gate["step_id"] == "sub/g"
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(gate["run_id"], "sub/g", "revise", "again", "ana", gate["token"])
    assert refused.value.error_type == "revise_unavailable"
    assert engine.status(gate["run_id"])["status"] == "await_gate"


def test_a_revise_past_the_round_limit_still_fails_the_run() -> None:
    engine = Engine()
    spec = NO_TARGET.replace("on_revise: null, on_kill: null", "on_revise: a, on_kill: null, max_rounds: 1")
    spec = spec.replace("    steps:", "    max_rounds: 3\n    steps:")
    gate = at_gate(engine, spec)
    work = engine.gate_resolve(gate["run_id"], "g", "revise", "again", "ana", gate["token"])
    again = engine.step_done(gate["run_id"], "a", {"v": 2}, work["token"])
    ended = engine.gate_resolve(gate["run_id"], "g", "revise", "more", "ana", again["token"])
    assert ended["status"] == "error" and ended["error_type"] == "rounds_exhausted"


def test_the_cli_refuses_the_revise_and_the_gate_still_waits(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "runs.db")
    engine = Engine(store=open_store(store))
    run = at_gate(engine, NO_TARGET)["run_id"]
    engine.close()
    revised = CliRunner().invoke(main, ["gate", "revise", run, "g", "--note", "again", "--store", store])
    assert revised.exit_code == 1
    assert "error: gate g cannot be revised: it has no on_revise target" in revised.stderr
    assert "decide approve or kill (reject) instead" in revised.stderr
    approved = CliRunner().invoke(main, ["gate", "approve", run, "g", "--store", store])
    assert approved.exit_code == 0 and "complete" in approved.stdout


def test_an_unresolvable_carry_revise_is_refused_with_what_happened_to_its_source() -> None:
    engine = Engine()
    first = engine.plan(CARRIED, {"deep": False})
    run = first["run_id"]
    after_plan = engine.step_done(run, "plan", {"tasks": ["t1"]}, first["token"])
    gate = engine.step_done(run, "work", {"v": "w"}, after_plan["token"])
    assert gate["status"] == "await_gate" and gate["decisions"] == ["approve", "revise", "kill"]
    with pytest.raises(EngineError) as refused:
        engine.gate_resolve(run, "g", "revise", "again", "ana", gate["token"])
    assert refused.value.error_type == "carry_revise_unresolved" and refused.value.message == UNRESOLVED


class Asked:
    """A gate callback answering ``answers`` in order, keeping the requests it was asked."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[GateRequest] = []

    def __call__(self, request: GateRequest) -> Any:
        self.requests.append(request)
        return self.answers.pop(0)


@pytest.mark.parametrize(("spec", "inputs", "agent", "offered", "why"), [
    (NO_TARGET, {}, lambda task: {"v": 1}, ["approve", "kill"], "it has no on_revise target"),
    (CARRIED, {"deep": False}, carried_agent, ["approve", "revise", "kill"], UNRESOLVED),
], ids=["no-on_revise", "carry-unresolved"])
def test_a_callback_is_asked_again_without_revise_and_its_next_decision_applies(spec, inputs, agent, offered,
                                                                                 why) -> None:
    asked = Asked(("revise", "again"), "approve")
    result = lockgate.run_sync(spec, inputs, agents={"claude": agent}, gates=CallbackGates(asked), store="memory")
    assert result.status == "complete"
    first, second = (r.response for r in asked.requests)
    assert first["decisions"] == offered
    assert second["decisions"] == ["approve", "kill"] and why in second["revise_unavailable"]
    assert [e.data["decision"] for e in result.events if e.kind == "gate_resolved"] == ["approve"]


def test_a_callback_revising_again_leaves_the_gate_waiting_and_the_result_says_why() -> None:
    asked = Asked("revise", "revise")
    result = lockgate.run_sync(CARRIED, {"deep": False}, agents={"claude": carried_agent},
                               gates=CallbackGates(asked), store="memory")
    assert result.status == "await_gate" and len(asked.requests) == 2
    assert result.response["refused"] == [{"step_id": "g", "decision": "revise",
                                           "error_type": "carry_revise_unresolved", "message": UNRESOLVED}]


async def test_the_terminal_prompt_says_why_and_asks_again() -> None:
    answers, said = iter(["r", "a"]), []

    def ask(prompt: str) -> str:
        return next(answers) if prompt.startswith("Decision") else "a note"

    gates = TerminalGates(ask=ask, say=said.append)
    result = await lockgate.run(CARRIED, {"deep": False}, agents={"claude": carried_agent}, gates=gates,
                                store="memory")
    assert result.status == "complete"
    assert f"your revise of gate g was not applied: {UNRESOLVED}" in said
    assert f"revise is not offered: {UNRESOLVED}" in said
    assert sum(line.startswith("Gate 'g'") for line in said) == 2
