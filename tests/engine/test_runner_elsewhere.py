"""What other processes do to a run a drive is driving: a cancel (``lockgate cancel`` in another
terminal) stops the drive at once (its agent calls cancelled, its evaluate commands killed,
instead of running on until each ends and its answer is refused); an evaluate command another
process started and left behind (it died) is started again once it is past its timeout."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.agents import Task
from lockgate.engine.runner import run
from lockgate.engine.store import open_store

#: a guard (nothing waits for it to pass): the drive checks for a cancel every WATCH_S = 1 s
GUARD_S = 30
SPEC = """version: 1
contracts:
  Note: {text: string}
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${slow.output}", contract: Note}
    steps:
      - {id: slow, agent: slow, do: "take your time", out: Note}
      - id: check
        evaluate: {command: "echo $$ > pid; echo go > started.fifo; exec sleep 600", timeout_ms: 600000}
        out: Verdict
"""


async def test_a_cancel_from_another_process_stops_agent_calls_and_commands(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "started.fifo")
    agent_started, agent_cancelled = asyncio.Event(), asyncio.Event()

    async def slow(task: Task) -> dict[str, Any]:
        agent_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            agent_cancelled.set()
            raise
        return {"text": "never"}

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    driving = asyncio.ensure_future(run(SPEC, {}, engine=engine, agents={"slow": slow}))
    async with asyncio.timeout(GUARD_S):
        await agent_started.wait()
        assert await asyncio.to_thread((tmp_path / "started.fifo").read_text) == "go\n"
        (summary,) = engine.runs()
        elsewhere = Engine(store=open_store(tmp_path / "runs.db"))
        assert elsewhere.cancel(summary["run_id"], "from another terminal")["status"] == "cancelled"
        elsewhere.close()
        result = await driving
    assert result.status == "cancelled"
    assert agent_cancelled.is_set()
    with pytest.raises(ProcessLookupError):  # the command was killed and reaped
        os.kill(int((tmp_path / "pid").read_text()), 0)


LEFT_BEHIND = """version: 1
contracts:
  Verdict: {status: string, children: array, reason: string}
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${check.output}", contract: Verdict}
    steps:
      - {id: a, agent: quick, do: "a", out: Note}
      - id: check
        after: [a]
        evaluate: {command: "cat > /dev/null; echo '{\\"status\\": \\"closed\\", \\"children\\": [], \\"reason\\": \\"rerun\\"}'", timeout_ms: 1000}
        out: Verdict
"""


async def test_a_command_left_running_by_a_process_that_is_gone_is_started_again(tmp_path: Path, monkeypatch) -> None:
    from lockgate.engine import drive, evaluate
    from lockgate.engine.evaluate import deferred
    from lockgate.engine.runner import Runner

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    plan = engine.plan(LEFT_BEHIND, {})
    with deferred():  # a process that started the command, then died before running it
        started = engine.step_done(plan["run_id"], "a", {"text": "a"}, plan["token"])
    assert started["status"] == "evaluating"
    monkeypatch.setattr(evaluate, "LEFT_BEHIND_GRACE_S", -60.0)  # its timeout is long past
    async with asyncio.timeout(GUARD_S):
        result = await drive.Drive(Runner(engine), engine.status(plan["run_id"])).drive()
    assert result.status == "complete" and result.output["reason"] == "rerun"
    assert "resumed" in [e["type"] for e in engine.audit(plan["run_id"])["events"]]


TWO_GATES = """version: 1
contracts:
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${e.output}", contract: Verdict}
    steps:
      - id: g1
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: g2
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: e
        after: [g1]
        evaluate: {command: "true", timeout_ms: 60000}
        out: Verdict
"""


async def test_a_drive_left_at_a_gate_while_another_process_runs_a_command_returns(tmp_path: Path) -> None:
    """Gates nobody answers here, and a command another process runs: the drive reports the
    waiting gate at once (it spun re-reading the run until the command ended)."""
    from lockgate.engine import drive
    from lockgate.engine.evaluate import deferred
    from lockgate.engine.gatechannel import CallbackGates
    from lockgate.engine.runner import Runner

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    plan = engine.plan(TWO_GATES, {})
    with deferred():  # another process decided g1 and runs e's command
        engine.resolve_waiting_gate(plan["run_id"], "g1", "approve")
    runner = Runner(engine, gates=CallbackGates(lambda request: None))
    async with asyncio.timeout(GUARD_S):
        result = await drive.Drive(runner, engine.status(plan["run_id"])).drive()
    assert result.status == "await_gate" and [g["step_id"] for g in result.waiting_gates] == ["g2"]


GATED = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${draft.output}", contract: Note}
    max_rounds: 5
    steps:
      - {id: draft, agent: writer, do: draft, out: Note}
      - id: check
        after: [draft]
        evaluate: {command: "check it", in: "${draft.output.text}", timeout_ms: 5000}
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""


async def test_a_revise_elsewhere_while_the_drives_command_runs_leaves_it_in_step_with_the_store(
        tmp_path: Path) -> None:
    """The revise resets the step whose command runs: its answer is stale, and the drive goes
    on from the run as stored (it reported the gate waiting that the revise had decided)."""
    other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    inputs: list[Any] = []

    def revising(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        inputs.append(value)
        if len(inputs) == 1:
            (summary,) = other.runs()
            (gate,) = other.status(summary["run_id"])["gates"]
            other.gate_resolve(summary["run_id"], "review", "revise", "again", "bob", gate["token"])
        return {"ok": True, "result": {"status": "closed", "children": [], "reason": "ok"}}

    drafts = iter(["v1", "v2"])

    async def writer(task: Task) -> dict[str, Any]:
        return {"text": next(drafts)}

    async with asyncio.timeout(GUARD_S):
        result = await run(GATED, {}, store=str(tmp_path / "runs.db"), workspace=tmp_path, evaluator=revising,
                           agents={"writer": writer})
    stored = other.status(result.run_id)
    assert result.status == stored["status"] == "await_gate"
    assert [g["token"] for g in result.waiting_gates] == [g["token"] for g in stored["gates"]]
    assert inputs == ["v1", "v2"]  # the reset step ran again on the revised draft



GATE_THEN_AFTER = """      - {id: slow, agent: slow, do: "take your time", out: Note}
      - id: ok
        gate: {on_approve: after, on_revise: null, on_kill: null}
"""
AFTER_AGENT = '      - {id: after, agent: after, do: "then", out: Note}\n'
AFTER_COMMAND = '      - {id: after, evaluate: {command: "check it", timeout_ms: 60000}}\n'
CLOSED = {"status": "closed", "children": [], "reason": "checked"}


async def drive_decided_elsewhere(tmp_path: Path, after: str, started: asyncio.Event,
                                  **options: Any) -> tuple[Any, Engine]:
    """Drive GATE_THEN_AFTER with step ``after`` (gates left waiting here) while its ``slow``
    agent keeps the drive busy; approve gate ``ok`` from another engine (which must run no
    command), and once ``started`` is set (the drive started the work the decision released),
    let ``slow`` answer. ``options`` go to the driving engine (``evaluator``) and to ``run``
    (``agents``). (The result, the other engine.)"""
    release = asyncio.Event()

    async def slow(task: Task) -> dict[str, Any]:
        await release.wait()
        return {"text": "slow"}

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                    evaluator=options.pop("evaluator", None))
    agents = {"slow": slow, **options.pop("agents", {})}
    driving = asyncio.ensure_future(run(note_flow(GATE_THEN_AFTER + after, output="slow"), {}, engine=engine,
                                        agents=agents))
    elsewhere = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                       evaluator=lambda *args: pytest.fail("the deciding process ran the command"))
    async with asyncio.timeout(GUARD_S):
        while not engine.runs() or not elsewhere.status(engine.runs()[0]["run_id"]).get("gates"):
            await asyncio.sleep(0.01)
        (summary,) = engine.runs()
        decided = elsewhere.resolve_waiting_gate(summary["run_id"], "ok", "approve")
        assert decided["driven_by"] == f"process {os.getpid()} on this host"
        await started.wait()  # before slow answers: the drive noticed the decision on its own
        release.set()
        result = await driving
    return result, elsewhere


async def test_a_drive_starts_the_agent_calls_a_decision_made_elsewhere_released(tmp_path: Path) -> None:
    called = asyncio.Event()

    async def after(task: Task) -> dict[str, Any]:
        called.set()
        return {"text": "after"}

    result, elsewhere = await drive_decided_elsewhere(tmp_path, AFTER_AGENT, called, agents={"after": after})
    assert result.status == "complete"
    assert [t["status"] for t in elsewhere.audit(result.run_id)["trace"]] == ["succeeded"] * 3
    elsewhere.close()


async def test_the_driver_runs_the_commands_a_decision_made_elsewhere_started(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    ran, inputs = asyncio.Event(), []

    def evaluator(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        inputs.append(command)
        loop.call_soon_threadsafe(ran.set)
        return {"ok": True, "result": CLOSED}

    result, elsewhere = await drive_decided_elsewhere(tmp_path, AFTER_COMMAND, ran, evaluator=evaluator)
    assert result.status == "complete" and inputs == ["check it"]
    (after,) = [t for t in elsewhere.audit(result.run_id)["trace"] if t["step_id"] == "after"]
    assert after["status"] == "succeeded" and after["output"] == CLOSED
    elsewhere.close()


async def test_a_drive_about_to_end_at_a_gate_runs_the_command_a_decision_elsewhere_left_it(tmp_path: Path) -> None:
    """The gate is decided by another process just as this drive leaves it waiting (it asks,
    and is told nothing): the decision leaves its command to the drive, which runs it rather
    than end with the gate it last saw waiting (and the command run by nobody)."""
    from lockgate.engine.gatechannel import CallbackGates

    ran: list[str] = []

    def evaluator(command: str, value: Any, timeout_ms: int, workspace: Any) -> dict[str, Any]:
        ran.append(command)
        return {"ok": True, "result": CLOSED}

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path, evaluator=evaluator)
    elsewhere = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path,
                       evaluator=lambda *args: pytest.fail("the deciding process ran the command"))

    def decided_elsewhere(request: Any) -> None:
        elsewhere.resolve_waiting_gate(request.run_id, request.step_id, "approve")
        return None  # not decided here

    spec = note_flow("      - id: ok\n        gate: {on_approve: after, on_revise: null, on_kill: null}\n"
                     + AFTER_COMMAND + '      - {id: last, agent: w, do: "x", out: Note, after: [after]}\n',
                     output="last")
    async with asyncio.timeout(GUARD_S):
        result = await run(spec, {}, engine=engine, gates=CallbackGates(decided_elsewhere),
                           agents={"w": lambda task: {"text": "done"}})
    assert result.status == "complete" and ran == ["check it"]
    elsewhere.close()
