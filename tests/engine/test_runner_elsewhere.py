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
