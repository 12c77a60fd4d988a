"""A second Ctrl-C while ``lockgate run`` is stopping an agent command (in the SIGTERM grace
period: the command takes its time to exit) still leaves nothing running: the command's whole
process group is SIGKILLed before the command exits, so what it says ("its agent calls were
stopped") is true, and a resume does not start a second copy beside the first (review s11 #1).
Real subprocesses and signals; the agent says on FIFOs when it started and when SIGTERM came."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_support import fifo_lines, gate_spec, lockgate_argv, lockgate_env

# SIGTERM ignored by a child it starts (the disposition is inherited), and only noted by the
# agent itself, on the FIFO "terminated"; both would sleep for ten minutes
STUBBORN_AGENT = textwrap.dedent('''
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])

    def noted(signum, frame):
        with open("terminated", "w") as fifo:
            fifo.write("SIGTERM\\n")

    signal.signal(signal.SIGTERM, noted)
    with open("started", "w") as fifo:
        fifo.write(f"{os.getpid()} {child.pid}\\n")
    while True:
        time.sleep(600)
    ''')

FAST_AGENT = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'text': 'done'}))\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "flow.stratum.yaml").write_text(gate_spec("approve"))
    (tmp_path / "agent.py").write_text(STUBBORN_AGENT)
    (tmp_path / "lockgate.toml").write_text(textwrap.dedent(f"""
        [agents.writer]
        type = "command"
        command = [{json.dumps(sys.executable)}, "agent.py"]
        """))
    os.mkfifo(tmp_path / "started")
    os.mkfifo(tmp_path / "terminated")
    return tmp_path


def test_a_second_ctrl_c_in_the_sigterm_grace_period_still_kills_the_agent_command(project):
    proc = subprocess.Popen(
        lockgate_argv("run", "flow.stratum.yaml", "--input", "topic=x", "--no-prompt"), cwd=project,
        env=lockgate_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    try:
        pids = [int(pid) for pid in fifo_lines(project / "started", 1, [proc]).split()]
        proc.send_signal(signal.SIGINT)
        fifo_lines(project / "terminated", 1, [proc])  # the run is now waiting out the grace period
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    try:
        assert proc.returncode == 130, stderr
        assert took < 5, f"took {took:.2f} s to exit after the second Ctrl-C"
        assert "Traceback" not in stderr, stderr
        assert "(its agent calls were stopped; nothing recorded is lost)" in stderr
        assert _all_gone(pids, within=5), f"the agent command (pids {pids}) outlived `lockgate run`"
    finally:
        for pid in pids:  # a failed check must not leave them running for ten minutes
            _kill(pid)
    rid = stderr.split("interrupted: run ", 1)[1].split()[0]
    # the run was left resumable: a resume with an agent that answers goes on to the gate
    (project / "agent.py").write_text(FAST_AGENT)
    resumed = subprocess.run(lockgate_argv("run", "--resume", rid, "--no-prompt"), cwd=project,
                             env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)
    assert resumed.returncode == 3, resumed.stderr
    assert f"run {rid} waits at gate 'approve'" in resumed.stderr


def _all_gone(pids: list[int], within: float) -> bool:
    """Whether every process of ``pids`` has exited (a zombie counts) within ``within`` s."""
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
