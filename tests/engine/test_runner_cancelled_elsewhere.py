"""A run cancelled by another process (``lockgate cancel`` in another terminal) stops the drive
at once: its agent calls are cancelled and its evaluate commands killed, instead of running on
until each ends and its answer is refused."""

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
