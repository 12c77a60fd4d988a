"""A resume right after the process running an evaluate command was SIGKILLed does not start the
command again while the first copy is still stopping: the dead process's guardian sends it
SIGTERM, and a command cleaning up then is still at work in the workspace (two at once there is
what the guardian exists to prevent). Real processes: ``lockgate run``, its command, its guardian."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from cli_support import fifo_lines, lockgate_argv, lockgate_env

SPEC = """version: 1
contracts:
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${check.output}", contract: Verdict}
    steps:
      - id: check
        evaluate: {command: "python3 check.py", timeout_ms: 600000}
        out: Verdict
"""
# The first copy says it started (on a FIFO the test reads), then works until stopped; on SIGTERM
# it takes a second to clean up. The second copy answers at once.
CHECK = """import json, os, signal, sys, time

def log(what):
    with open("log", "a") as out:
        out.write(f"{os.getpid()} {what}\\n")

def on_term(*_):
    time.sleep(1.8)  # cleaning up, within the guardian's 2 s grace: still at work in the workspace
    log("end")
    sys.exit(1)

signal.signal(signal.SIGTERM, on_term)
sys.stdin.read()
log("start")
if not os.path.exists("once"):
    open("once", "w").close()
    with open("started.fifo", "w") as fifo:
        fifo.write("go\\n")
    while True:
        time.sleep(0.05)
log("end")
print(json.dumps({"status": "closed", "children": [], "reason": "checked"}))
"""


def killed_while_running(cwd: Path) -> str:
    """Run the flow of ``cwd`` with ``lockgate run`` until its command says it started, SIGKILL
    that process (its guardian then stops the command: SIGTERM, SIGKILL 2 s later); the run id."""
    os.mkfifo(cwd / "started.fifo")
    first = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", "--store", "runs.db", "--no-prompt"),
                             cwd=cwd, env=lockgate_env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert fifo_lines(cwd / "started.fifo", 1, [first]) == "go\n"
        first.send_signal(signal.SIGKILL)
        first.communicate()
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    listed = subprocess.run(lockgate_argv("runs", "--store", "runs.db", "--format", "json"), cwd=cwd,
                            env=lockgate_env(), capture_output=True, text=True, timeout=60, check=True).stdout
    (summary,) = json.loads(listed)
    return summary["run_id"]


def resumed_one_at_a_time(cwd: Path, run_id: str) -> None:
    """Resume the run with ``lockgate run --resume``: it completes, and the log shows the
    command's two copies one after the other."""
    resumed = subprocess.run(lockgate_argv("run", "--resume", run_id, "--store", "runs.db", "--no-prompt"),
                             cwd=cwd, env=lockgate_env(), stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=120, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert logged(cwd) == ["start", "end", "start", "end"]


def logged(cwd: Path) -> list[str]:
    """What the command's copies logged, the first copy's lines told apart from the second's."""
    lines = [line.split() for line in (cwd / "log").read_text().splitlines()]
    assert len({pid for pid, _ in lines}) == 2 and lines[0][0] == lines[1][0], lines
    return [what for _, what in lines]


def test_a_resume_waits_until_the_dead_runners_command_has_stopped(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "check.py").write_text(CHECK)
    resumed_one_at_a_time(tmp_path, killed_while_running(tmp_path))


AGENT_SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${write.output}", contract: Note}
    steps:
      - {id: write, agent: writer, do: "write", out: Note}
"""
CONFIG = """[agents.writer]
type = "command"
command = ["python3", "writer.py"]
"""


def test_a_resume_waits_until_the_dead_runners_agent_command_has_stopped(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(AGENT_SPEC)
    (tmp_path / "lockgate.toml").write_text(CONFIG)
    (tmp_path / "writer.py").write_text(CHECK.replace('{"status": "closed", "children": [], "reason": "checked"}',
                                                      '{"text": "written"}'))
    resumed_one_at_a_time(tmp_path, killed_while_running(tmp_path))

def test_a_resume_in_python_waits_off_the_event_loop(tmp_path: Path) -> None:
    """A notebook resumes on the kernel's event loop: the wait for the dead runner's commands
    must leave the loop free (a cell typed meanwhile runs at once)."""
    import asyncio
    import time

    import lockgate
    from lockgate.engine.store import open_store

    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "check.py").write_text(CHECK)
    run_id = killed_while_running(tmp_path)
    store = open_store(tmp_path / "runs.db")

    async def resumed_while_ticking() -> tuple[str, float]:
        gaps: list[float] = []

        async def tick() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.02)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticker = asyncio.ensure_future(tick())
        await asyncio.sleep(0.05)  # ticking
        old_cwd = os.getcwd()
        os.chdir(tmp_path)  # the command runs in the workspace
        try:
            result = await lockgate.resume(run_id, store=store, workspace=tmp_path)
        finally:
            os.chdir(old_cwd)
            ticker.cancel()
        return result.status, max(gaps)

    status, longest = asyncio.run(resumed_while_ticking())
    store.close()
    assert status == "complete"
    assert logged(tmp_path) == ["start", "end", "start", "end"]  # it did wait for the first copy
    assert longest < 0.5, longest  # the loop was not held while it waited (about a second)
