"""A gate decided through the MCP server while the run's driver is stopping (Ctrl-C) waits for
that driver to give the run up before it runs the command the decision starts; the server's
other tools answer meanwhile (the wait is made with the server's lock left, as a command is).

A real ``lockgate run`` drives the run and a real MCP client talks to ``python -m lockgate mcp``
over stdio; the agent that is slow to stop waits on a FIFO the test writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from claim_holders import AGENTS, SPEC, STORE, env, write_fifo
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from processes import GUARD_S, wait_until

from lockgate.engine import Engine
from lockgate.engine.store import open_store


@asynccontextmanager
async def mcp_server(folder: Path) -> AsyncIterator[Any]:
    """A client of a fresh ``lockgate mcp`` process on ``folder``'s store, calling tools that must
    succeed: ``await call(tool, arguments)`` is the tool's structured content."""
    params = StdioServerParameters(command=sys.executable, cwd=str(folder), env={**env(), "PYTHONUNBUFFERED": "1"},
                                   args=["-m", "lockgate", "mcp", *STORE, "--workspace", str(folder)])
    with anyio.fail_after(GUARD_S * 2):
        async with Client(params) as client:
            async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content[0].text
                return result.structured_content

            yield call


async def test_other_tools_answer_while_a_decision_waits_for_a_stopping_driver(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    os.mkfifo(tmp_path / "release")
    (tmp_path / "verdict").write_text('{"status": "closed", "children": [], "reason": "ok"}')
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run = subprocess.Popen([sys.executable, "-m", "lockgate", "run", "flow.stratum.yaml", "--agents", "agents.py",
                            *STORE, "--no-prompt"], cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (tmp_path / "started").exists() and (tmp_path / "started").read_text(), "the agent")
        run_id = (tmp_path / "started").read_text()
        run.send_signal(signal.SIGINT)
        wait_until(lambda: engine.claim_of(run_id).stopping, "the drive to stop")
        async with mcp_server(tmp_path) as call:
            token = (await call("lockgate_status", {"run_id": run_id}))["gates"][0]["token"]
            decided: dict[str, Any] = {}

            async def decide() -> None:
                decided.update(await call("lockgate_gate_resolve", {"run_id": run_id, "step_id": "g1",
                                                                    "outcome": "approve", "token": token,
                                                                    "rationale": "fine", "resolved_by": "human"}))

            async with anyio.create_task_group() as group:
                group.start_soon(decide)
                while not engine.status(run_id).get("evaluating"):  # decided: c1 waits for the driver
                    await anyio.sleep(0.01)
                status = await call("lockgate_status", {"run_id": run_id})
                assert not decided, "lockgate_status waited for the decision's wait for the stopping driver"
                assert status["stopping_by"] == f"process {run.pid} on this host"
                await anyio.to_thread.run_sync(write_fifo, tmp_path / "release", "go")
        assert decided["status"] == "execute_step" and "stopping_by" not in decided
        assert (tmp_path / "ran").read_text().split()  # c1 ran, in the server
        run.communicate(timeout=GUARD_S)
    finally:
        write_fifo(tmp_path / "release", "go")
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert len((tmp_path / "ran").read_text().split()) == 1
    engine.close()
