"""A server killed while it runs an evaluate command leaves the run showing the command running;
another server says the process running it is gone and to call lockgate_resume (``runner_gone``),
at once and when it was waiting for the outcome, instead of "wait" until the command's timeout
plus a grace period. While that process lives, it still says to wait."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_support import Session, connect

from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${check.output}", contract: Verdict}
    steps:
      - {id: a, do: "write a note", out: Note}
      - id: check
        after: [a]
        evaluate: {command: "sh check.sh", in: "${a.output.text}", timeout_ms: 600000}
        out: Verdict
"""
# The first run says it started on a FIFO, then waits for a release that never comes (its server
# is killed); a run after that answers at once.
CHECK = """cat > /dev/null
if [ ! -e started-once ]; then
  touch started-once
  echo go > started.fifo
  read line < release.fifo
fi
echo '{"status": "closed", "children": [], "reason": "checked"}'
"""


def workspace(tmp_path: Path) -> Path:
    (tmp_path / "check.sh").write_text(CHECK)
    for fifo in ("started.fifo", "release.fifo"):
        os.mkfifo(tmp_path / fifo)
    return tmp_path


async def killed_while_checking(tmp_path: Path, meanwhile: Any = None) -> str:
    """A run whose server was SIGKILLed while it ran the command of step check (its claim on the
    run names it); ``meanwhile(run_id)`` runs once the command started, before the kill."""
    run_id = ""
    try:
        async with connect(tmp_path / "runs.db", tmp_path) as first:
            plan = await first.ok("lockgate_plan", {"spec": SPEC})
            run_id = plan["run_id"]
            async with anyio.create_task_group() as group:
                group.start_soon(first.raw, "lockgate_step_done", {"run_id": run_id, "step_id": "a",
                                                                   "token": plan["token"], "result": {"text": "n"}})
                assert await anyio.to_thread.run_sync((tmp_path / "started.fifo").read_text) == "go\n"
                if meanwhile is not None:
                    await meanwhile(run_id)
                claim = Engine(store=open_store(tmp_path / "runs.db")).claim_of(run_id)
                assert claim is not None and claim.commands_only
                os.kill(claim.pid, signal.SIGKILL)
    except MCPError as ended:  # the session ends with its server: the call it was making fails
        assert run_id, f"the server ended before the run was planned: {ended}"
    _release_leftover(tmp_path)
    return run_id


def _release_leftover(tmp_path: Path) -> None:
    """Let the command go if it outlived its server (nothing, when it died with it)."""
    try:
        fd = os.open(tmp_path / "release.fifo", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader: the command is gone
        return
    os.write(fd, b"go\n")
    os.close(fd)


async def guidance(s: Session, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    result = await s.raw(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content, " ".join(block.text for block in result.content[1:])


async def test_a_command_whose_server_was_killed_is_resumed_not_waited_for(tmp_path: Path) -> None:
    run_id = await killed_while_checking(workspace(tmp_path))
    async with connect(tmp_path / "runs.db", tmp_path) as s:
        out, said = await guidance(s, "lockgate_status", {"run_id": run_id})
        assert "runner_gone" not in out  # first seen now: its command may still be stopping (a resume would run a second copy)
        started = time.monotonic()  # gone once the guardian's grace is over
        out, said = await guidance(s, "lockgate_status", {"run_id": run_id, "wait_seconds": 120})
        assert time.monotonic() - started < 30 and out["runner_gone"] is True

        out, said = await guidance(s, "lockgate_status", {"run_id": run_id})
        assert out["status"] == "evaluating" and out["runner_gone"] is True
        assert "the process running it is gone" in said and f"Call lockgate_resume with run_id {run_id}" in said
        assert "wait_seconds" not in said

        why = await s.ok("lockgate_why", {"run_id": run_id})
        [wait] = why["waits"]
        assert wait["kind"] == "evaluate" and wait["reason"].endswith("; the process running it is gone")
        assert wait["tools"] == [{"tool": "lockgate_resume", "arguments": {"run_id": run_id}, "also": []}]
        assert wait["commands"] == []

        done = await s.ok("lockgate_resume", {"run_id": run_id})
        assert done["status"] == "complete" and done["output"]["reason"] == "checked"


async def test_a_wait_ends_once_the_process_running_the_command_dies(tmp_path: Path) -> None:
    """While the first server lives another one says to wait; its wait for the outcome ends
    with ``runner_gone`` once that server is killed (a dead process writes nothing to the store:
    the wait looks at it again)."""
    async with connect(tmp_path / "runs.db", workspace(tmp_path)) as s:
        outcome: dict[str, Any] = {}

        async def watch(run_id: str) -> None:
            out, said = await guidance(s, "lockgate_status", {"run_id": run_id})
            assert out["commands_by"] and "runner_gone" not in out
            assert "call lockgate_status with wait_seconds" in said and "lockgate_resume" not in said
            outcome["started"] = time.monotonic()

        async def waiting(run_id: str) -> None:
            outcome["out"], outcome["said"] = await guidance(s, "lockgate_status",
                                                             {"run_id": run_id, "wait_seconds": 120})
            outcome["waited"] = time.monotonic() - outcome["started"]

        async with anyio.create_task_group() as group:
            async def meanwhile(run_id: str) -> None:
                await watch(run_id)
                group.start_soon(waiting, run_id)

            await killed_while_checking(tmp_path, meanwhile)
        assert outcome["out"]["runner_gone"] is True and "lockgate_resume" in outcome["said"]
        assert outcome["waited"] < 60
