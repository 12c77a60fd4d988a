"""Resuming a run checks its agents first, as starting one does: an agent that cannot run here
(a missing binary, credentials) is refused before anything is called, and the run is left as it
was (a resumed run called it and failed for good once its retries ran out)."""

from __future__ import annotations

import pytest

from lockgate.engine import Engine
from lockgate.engine.agents import AgentResult, Task
from lockgate.engine.runner import Runner
from lockgate.errors import AgentUnavailable

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${write.output}", contract: Note}
    steps:
      - {id: write, agent: offline, do: "write", out: Note}
"""


class Offline:
    """An agent whose preflight finds it cannot run here."""

    name = "offline"

    def __init__(self) -> None:
        self.calls = 0

    def preflight(self) -> None:
        raise AgentUnavailable("agent 'offline': its binary is not on PATH")

    async def execute(self, task: Task) -> AgentResult:
        self.calls += 1
        return AgentResult.failed("cannot run")

    async def cancel(self) -> None:
        pass


async def test_a_resume_whose_agent_cannot_run_here_is_refused_before_anything_runs() -> None:
    engine = Engine()
    plan = engine.plan(SPEC, {})  # as a run stopped with its step dispatched
    offline = Offline()
    with pytest.raises(AgentUnavailable, match="not on PATH"):
        await Runner(engine, agents={"offline": offline}).resume(plan["run_id"])
    assert offline.calls == 0
    status = engine.status(plan["run_id"])
    assert status["status"] == "execute_step" and status["token"] == plan["token"]
    assert "resumed" not in [e["type"] for e in engine.audit(plan["run_id"])["events"]]


async def test_a_finished_run_is_reported_without_asking_for_its_agents() -> None:
    engine = Engine()
    plan = engine.plan(SPEC, {})
    engine.step_done(plan["run_id"], "write", {"text": "done"}, plan["token"])
    result = await Runner(engine, agents={"offline": Offline()}).resume(plan["run_id"])
    assert (result.status, result.output) == ("complete", {"text": "done"})
