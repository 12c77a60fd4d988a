"""What ``resume``, ``why``, ``runs`` and the MCP server's guidance say about the process holding
a run when it does not drive it: one that only runs an evaluate command (``lockgate gate
approve``) leaves the dispatched steps to nobody until a resume after it, and one whose drive is
stopping (Ctrl-C) starts nothing more and keeps a resume out until it has exited. Once it has,
``runs`` says a step is left with nobody at it besides the waiting gate.

Every process is real: ``lockgate run``, ``gate approve``, ``resume``, ``why`` and ``runs`` run
as in a terminal; the command and the agent wait on FIFOs the test writes."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from claim_holders import (
    SPEC,
    STORE,
    VERDICT,
    env,
    project,
    started,
    until_released,
)
from processes import GUARD_S, wait_until

from lockgate.engine import Engine
from lockgate.engine.store import open_store


def lockgate(folder: Path, *args: str) -> str:
    """What ``lockgate ARGS...`` prints (stdout), run to its end in ``folder``."""
    done = subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=folder, env=env(), capture_output=True,
                          text=True, timeout=GUARD_S * 4, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_process_running_only_a_command_is_not_called_the_runs_driver(tmp_path: Path) -> None:
    from lockgate.mcp.server import call_tool, make_context

    project(tmp_path)
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(SPEC, {})["run_id"]  # x dispatched, g1 waiting: nobody drives it
    with until_released(started(tmp_path, "gate", "approve", run_id, "g1", *STORE), tmp_path / "verdict", VERDICT) as approve:
        wait_until(lambda: (tmp_path / "ran").exists(), "the command")
        who = f"process {approve.pid} on this host is running the command of step c1"
        resume = f"lockgate run --resume {run_id} --store runs.db"

        assert f"{who}; once it ends, resume the run to continue with agents: {resume}" in lockgate(
            tmp_path, "resume", run_id, *STORE)
        why = lockgate(tmp_path, "why", run_id, *STORE)
        assert f"step x is dispatched to agent slow (attempt 1, 1 retry left) and waits for its result; nobody " \
               f"is doing it: {who}; once that ends, resume the run to continue with agents\n    {resume}" in why
        assert "driving" not in why
        assert f"process {approve.pid} is running the command of step c1; idle otherwise (resume it once that " \
               "ends)" in lockgate(tmp_path, "runs", *STORE)
        status = call_tool(make_context(store=str(tmp_path / "runs.db"), workspace=tmp_path), "lockgate_status",
                           {"run_id": run_id})
        guidance = " ".join(part.text for part in status.content[1:])
        assert f"{who} and nothing else: nobody does the dispatched steps, they are left to you" in guidance
        assert "do not do them too" not in guidance
    assert approve.returncode == 0, approve.stderr
    assert len((tmp_path / "ran").read_text().split()) == 1
    engine.close()


def test_a_stopping_drive_is_not_called_the_runs_driver_and_a_step_left_is_said(tmp_path: Path) -> None:
    project(tmp_path)
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run = started(tmp_path, "run", "flow.stratum.yaml", "--agents", "agents.py", *STORE, "--no-prompt")
    with until_released(run, tmp_path / "release", "go"):
        wait_until(lambda: (tmp_path / "started").exists() and (tmp_path / "started").read_text(), "the agent")
        run_id = (tmp_path / "started").read_text()
        run.send_signal(signal.SIGINT)
        wait_until(lambda: engine.claim_of(run_id).stopping, "the drive to stop")
        who = f"process {run.pid} on this host is stopping (Ctrl-C)"
        resume = f"lockgate run --resume {run_id} --agents agents.py --store runs.db"

        why = lockgate(tmp_path, "why", run_id, *STORE)
        assert f"waits for its result; {who}; resume once it has exited\n    {resume}" in why
        assert "driving" not in why
        assert f"waiting at gate g1; process {run.pid} is stopping (Ctrl-C): resume it once that process has " \
               "exited" in lockgate(tmp_path, "runs", *STORE)
        assert f"{who}; once it has exited, continue with agents: {resume}" in lockgate(tmp_path, "resume", run_id,
                                                                                        *STORE)
    assert run.returncode == 130, run.stderr
    assert "waiting at gate g1; idle otherwise (resume it)" in lockgate(tmp_path, "runs", *STORE)
    engine.close()
