"""lockgate_why for the agent doing the steps: its own dispatch is ended by lockgate_step_done
with its token (not `lockgate run --resume`, which hands the step to a built-in agent), a gate by
lockgate_gate_resolve or by a person's command; and every command for a person, in lockgate_why
and in the gate guidance, reaches the server's own store (`--store`)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp_support import REVIEWED, SESSION_TIMEOUT, Session, connect


async def at_gate(s: Session) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(run, why of its dispatch, the gate response after reporting it)."""
    plan = await s.ok("lockgate_plan", {"spec": REVIEWED, "inputs": {"text": "t"}})
    run = plan["run_id"]
    why = await s.ok("lockgate_why", {"run_id": run})
    gate = await s.ok("lockgate_step_done", {"run_id": run, "step_id": "work", "token": plan["token"],
                                             "result": {"result": "done", "quality_score": 0.9}})
    return run, {**why, "token": plan["token"]}, gate


def typed(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` typed by a person in directory ``cwd``."""
    words = shlex.split(command)
    assert words[0] == "lockgate"
    return subprocess.run([sys.executable, "-m", "lockgate", *words[1:]], capture_output=True, text=True,
                          timeout=SESSION_TIMEOUT, check=False, cwd=cwd, env={**os.environ})


async def test_why_points_the_agent_at_its_own_tools(tmp_path: Path) -> None:
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        run, why, gate = await at_gate(s)
        [wait] = why["waits"]
        assert wait["kind"] == "dispatch" and wait["commands"] == [] and wait["actions"] == []
        assert wait["tools"] == [{"tool": "lockgate_step_done", "also": ["result"],
                                  "arguments": {"run_id": run, "step_id": "work", "token": why["token"]}}]

        [wait] = (await s.ok("lockgate_why", {"run_id": run}))["waits"]
        assert wait["kind"] == "gate"
        assert wait["tools"] == [{"tool": "lockgate_gate_resolve", "also": ["outcome", "rationale", "resolved_by"],
                                  "arguments": {"run_id": run, "step_id": "review", "token": gate["token"]}}]
        store = str(tmp_path / "runs.db")
        assert wait["commands"][0] == f'lockgate gate approve {run} review --note "..." --store {store}'
        assert all(act["options"]["store"] == store for act in wait["actions"])


async def test_a_persons_gate_command_reaches_the_servers_store(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with connect(Path("shared/runs.db"), tmp_path) as s:  # relative to the server's directory
        run, _, _ = await at_gate(s)
        raw = await s.raw("lockgate_status", {"run_id": run})
        said = raw.content[-1].text
        command = f"lockgate gate approve {run} review --store {tmp_path / 'shared' / 'runs.db'}"
        assert f"`{command}`" in said
        [wait] = (await s.ok("lockgate_why", {"run_id": run}))["waits"]
        assert wait["commands"][0].endswith(f"--store {tmp_path / 'shared' / 'runs.db'}")

        person = typed(command, elsewhere)
        assert person.returncode == 0, person.stderr
        assert (await s.ok("lockgate_status", {"run_id": run}))["status"] == "complete"
        assert not (elsewhere / ".lockgate").exists()


async def test_a_server_keeping_its_runs_in_memory_offers_no_persons_command(tmp_path: Path) -> None:
    async with connect(Path("memory"), tmp_path) as s:
        run, _, _ = await at_gate(s)
        said = (await s.raw("lockgate_status", {"run_id": run})).content[-1].text
        assert "lockgate gate approve" not in said, said  # it could not reach this server's runs
        assert "this server keeps its runs in memory: no terminal can reach them" in said, said
        [wait] = (await s.ok("lockgate_why", {"run_id": run}))["waits"]
        assert wait["commands"] == [] and wait["actions"] == []
        assert [t["tool"] for t in wait["tools"]] == ["lockgate_gate_resolve"]
