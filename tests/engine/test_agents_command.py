"""The command adapter against real subprocesses."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from lockgate.engine.agents import CommandAgent, Task
from lockgate.errors import AgentUnavailable

from agent_support import pid_alive, read_pid, wait_until, write_script

SPAWNS_GRANDCHILD = """
import json, subprocess, sys, time
task = json.load(sys.stdin)
child = subprocess.Popen(["sleep", "300"])
with open(task["inputs"]["pidfile"] + ".tmp", "w") as f:
    f.write(str(child.pid))
import os
os.replace(task["inputs"]["pidfile"] + ".tmp", task["inputs"]["pidfile"])
time.sleep(300)
"""


def task(**kw) -> Task:
    base = dict(run_id="r1", step_id="write", prompt="Write a haiku", agent="lint")
    base.update(kw)
    return Task(**base)


def agent(script: Path, **kw) -> CommandAgent:
    return CommandAgent("lint", [sys.executable, str(script)], **kw)


async def test_task_json_in_and_output_json_out(tmp_path):
    script = write_script(tmp_path, "echo.py", """
        import json, os, sys
        task = json.load(sys.stdin)
        print(json.dumps({"step": task["step_id"], "prompt": task["prompt"],
                          "violations": task["violations"], "cwd": os.getcwd(),
                          "schema": task["schema"]}))
    """)
    violations = ({"path": "result.title", "message": "expected a string"},)
    result = await agent(script).execute(task(
        cwd=str(tmp_path), attempt=2, violations=violations, schema={"type": "object"}))
    assert result.ok, result.failure
    assert result.output == {"step": "write", "prompt": "Write a haiku",
                             "violations": [dict(violations[0])], "cwd": str(tmp_path),
                             "schema": {"type": "object"}}
    assert result.telemetry.duration_ms > 0


async def test_non_json_output_is_a_failure_naming_the_command(tmp_path):
    script = write_script(tmp_path, "prose.py", "print('Sure! Here is the answer: 42')\n")
    result = await agent(script).execute(task())
    assert not result.ok
    assert "prose.py" in result.failure and "did not print JSON" in result.failure
    assert "Sure! Here is the answer" in result.failure


async def test_empty_output_is_a_failure(tmp_path):
    script = write_script(tmp_path, "silent.py", "import sys; sys.stdin.read()\n")
    result = await agent(script).execute(task())
    assert "(empty output)" in result.failure


async def test_non_zero_exit_reports_status_and_stderr_tail(tmp_path):
    script = write_script(tmp_path, "crash.py", """
        import sys
        sys.stderr.write("x" * 5000 + "\\nTraceback: lint config missing\\n")
        sys.exit(3)
    """)
    result = await agent(script).execute(task())
    assert "exited with status 3" in result.failure
    assert result.failure.endswith("Traceback: lint config missing")
    assert len(result.failure) < 2300


async def test_timeout_kills_the_process_group(tmp_path):
    script = write_script(tmp_path, "hang.py", SPAWNS_GRANDCHILD)
    pidfile = tmp_path / "grandchild.pid"
    call = asyncio.ensure_future(agent(script, timeout=60).execute(
        task(inputs={"pidfile": str(pidfile)}, timeout=1.0)))
    result = await call
    assert "timed out after 1s" in result.failure
    grandchild = read_pid(pidfile)
    assert grandchild is not None
    await wait_until(lambda: not pid_alive(grandchild))


async def test_cancel_kills_grandchildren(tmp_path):
    script = write_script(tmp_path, "hang.py", SPAWNS_GRANDCHILD)
    pidfile = tmp_path / "grandchild.pid"
    lint = agent(script)
    call = asyncio.ensure_future(lint.execute(task(inputs={"pidfile": str(pidfile)})))
    await wait_until(lambda: read_pid(pidfile) is not None)
    grandchild = read_pid(pidfile)
    assert pid_alive(grandchild)
    await lint.cancel()
    result = await call
    assert "cancelled" in result.failure
    await wait_until(lambda: not pid_alive(grandchild))


async def test_cancelling_the_asyncio_task_kills_grandchildren(tmp_path):
    script = write_script(tmp_path, "hang.py", SPAWNS_GRANDCHILD)
    pidfile = tmp_path / "grandchild.pid"
    call = asyncio.ensure_future(agent(script).execute(task(inputs={"pidfile": str(pidfile)})))
    await wait_until(lambda: read_pid(pidfile) is not None)
    grandchild = read_pid(pidfile)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_until(lambda: not pid_alive(grandchild))


async def test_background_leftovers_do_not_hold_the_call_open(tmp_path):
    script = write_script(tmp_path, "daemonish.py", """
        import json, subprocess, sys
        task = json.load(sys.stdin)
        child = subprocess.Popen(["sleep", "300"])  # inherits stdout: would block EOF
        open(task["inputs"]["pidfile"], "w").write(str(child.pid))
        print(json.dumps({"done": True}))
    """)
    pidfile = tmp_path / "left.pid"
    result = await agent(script, timeout=30).execute(task(inputs={"pidfile": str(pidfile)}))
    assert result.output == {"done": True}
    await wait_until(lambda: not pid_alive(read_pid(pidfile)))


async def test_concurrent_calls_are_independent(tmp_path):
    script = write_script(tmp_path, "echo.py", """
        import json, sys
        task = json.load(sys.stdin)
        print(json.dumps(task["step_id"]))
    """)
    lint = agent(script)
    results = await asyncio.gather(*(lint.execute(task(step_id=f"s{i}")) for i in range(5)))
    assert [r.output for r in results] == [f"s{i}" for i in range(5)]


def test_preflight_names_a_missing_program(tmp_path):
    with pytest.raises(AgentUnavailable, match="'no-such-agent-binary' is not on PATH"):
        CommandAgent("lint", ["no-such-agent-binary"]).preflight()
    with pytest.raises(AgentUnavailable, match="not an executable file"):
        CommandAgent("lint", ["./missing.sh"], cwd=str(tmp_path)).preflight()
    CommandAgent("lint", [sys.executable, "x.py"]).preflight()


async def test_missing_program_at_run_time_is_a_failure(tmp_path):
    result = await CommandAgent("lint", ["no-such-agent-binary"]).execute(task())
    assert "not found" in result.failure
