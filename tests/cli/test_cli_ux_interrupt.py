"""Ctrl-C during ``lockgate run`` detaches: the agent calls in flight are stopped, the run is
left as it was (resumable, as after a kill), and the command prints how to resume it (with the
options it was given) and how to cancel it; exit status 130. Real subprocesses and signals."""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from cli_support import ROOT, fifo_lines, gate_spec, lockgate_argv, lockgate_env

SPEC = gate_spec("approve", revise_to="draft")

# the agent says it has started on a FIFO, then blocks until the process ends
BLOCKING_AGENT = textwrap.dedent('''
    import threading

    def writer(task):
        with open("started", "w") as fifo:
            fifo.write("started\\n")
        threading.Event().wait(600)
    ''')

FAST_AGENT = "def writer(task):\n    return {'text': 'about ' + task.prompt}\n"

# a command agent (its own process group) that announces its pid, then sleeps
COMMAND_AGENT = textwrap.dedent('''
    import os, time
    with open("started", "w") as fifo:
        fifo.write(f"{os.getpid()}\\n")
    time.sleep(600)
    ''')


@pytest.fixture
def project(tmp_path):
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    os.mkfifo(tmp_path / "started")
    return tmp_path


def start(cwd: Path, *args: str, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(
        lockgate_argv(*args), cwd=cwd, env=lockgate_env(), stdin=stdin,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a shell's background job inherits an ignored SIGINT; give the CLI the default back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509


def lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(),
                          capture_output=True, text=True, timeout=120, check=False)


def wait_started(project: Path, proc: subprocess.Popen) -> str:
    """The line the agent writes on the FIFO once it is running."""
    return fifo_lines(project / "started", 1, [proc]).strip()


def interrupt(proc: subprocess.Popen) -> tuple[str, float]:
    """SIGINT ``proc``; (its stderr, seconds from the signal to its exit)."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    return stderr, time.monotonic() - sent


def only_run(project: Path, store: str) -> dict:
    runs = json.loads(lockgate(project, "runs", "--store", store, "--format", "json").stdout)
    assert len(runs) == 1, runs
    return runs[0]


def test_ctrl_c_leaves_the_run_resumable_and_says_how_to_go_on(project):
    (project / "agents.py").write_text(BLOCKING_AGENT)
    proc = start(project, "run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                 "--store", "runs.db", "--no-prompt")
    wait_started(project, proc)
    stderr, took = interrupt(proc)
    assert proc.returncode == 130, stderr
    assert took < 5, f"took {took:.2f} s to exit after Ctrl-C"
    assert "Traceback" not in stderr and "cancelled" not in stderr
    run = only_run(project, "runs.db")
    assert run["status"] == "running"
    rid = run["run_id"]
    lines = stderr.strip().splitlines()[-3:]
    assert lines == [
        f"interrupted: run {rid} is left as it was (its agent calls were stopped; nothing recorded is lost)",
        f"  continue it with: lockgate run --resume {rid} --agents agents.py --store runs.db",
        f"  or cancel it for good: lockgate cancel {rid} --store runs.db",
    ]
    # the printed command carries the run on (with agents that now answer)
    (project / "agents.py").write_text(FAST_AGENT)
    resumed = lockgate(project, *shlex.split(lines[1].split(": ", 1)[1])[1:])
    assert resumed.returncode == 3, resumed.stderr
    assert f"run {rid} waits at gate 'approve'" in resumed.stderr
    # ...and the printed cancel command still cancels it for good
    cancelled = lockgate(project, *shlex.split(lines[2].split(": ", 1)[1])[1:])
    assert cancelled.returncode == 0, cancelled.stderr
    assert only_run(project, "runs.db")["status"] == "cancelled"


def test_ctrl_c_stops_an_agent_process(project):
    (project / "agent.py").write_text(COMMAND_AGENT)
    (project / "lockgate.toml").write_text(textwrap.dedent(f"""
        [agents.writer]
        type = "command"
        command = [{json.dumps(sys.executable)}, "agent.py"]
        """))
    proc = start(project, "run", "flow.stratum.yaml", "--input", "topic=x", "--no-prompt")
    pid = int(wait_started(project, proc))
    stderr, took = interrupt(proc)
    assert proc.returncode == 130, stderr
    assert took < 10, f"took {took:.2f} s to exit after Ctrl-C"
    assert not _alive(pid), "the agent's process outlived the command"
    rid = only_run(project, ".lockgate/lockgate.db")["run_id"]
    # no --agents was given: the resume command has none
    assert f"  continue it with: lockgate run --resume {rid}\n" in stderr


def test_ctrl_c_at_a_gate_prompt_exits_at_once_and_the_gate_stays_waiting(project):
    (project / "agents.py").write_text(FAST_AGENT)
    proc = start(project, "run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                 stdin=subprocess.PIPE)
    seen = _read_until(proc, "Decision")
    stderr, took = interrupt(proc)
    stderr = seen + stderr
    assert proc.returncode == 130, stderr
    assert took < 5, f"took {took:.2f} s to exit after Ctrl-C"
    rid = only_run(project, ".lockgate/lockgate.db")["run_id"]
    assert f"continue it with: lockgate run --resume {rid} --agents agents.py" in stderr
    why = lockgate(project, "why", rid)
    assert "gate approve waits for a decision" in why.stdout, why.stdout


def test_the_help_says_what_ctrl_c_does():
    shown = " ".join(lockgate(ROOT, "run", "--help").stdout.split())
    assert "Ctrl-C stops the agent calls in flight and leaves the run as it was (exit status 130)" in shown
    assert "lockgate cancel RUN" in shown


def _read_until(proc: subprocess.Popen, text: str, timeout: float = 60) -> str:
    """stderr of ``proc`` up to and including ``text`` (a prompt has no line end to wait for)."""
    seen, deadline = "", time.monotonic() + timeout
    fd = proc.stderr.fileno()
    while text not in seen:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(fd, 4096).decode() if ready else ""
        assert chunk, f"no {text!r} from the command; it said: {seen}"
        seen += chunk
    return seen


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_ctrl_c_on_a_run_in_a_memory_store_says_it_is_gone(project):
    """An in-memory run ends with the process: no resume or cancel command is offered for it."""
    (project / "agents.py").write_text(BLOCKING_AGENT)
    proc = start(project, "run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                 "--store", "memory", "--no-prompt")
    wait_started(project, proc)
    stderr, _ = interrupt(proc)
    assert proc.returncode == 130, stderr
    assert "lived in a memory store and ends with this process: nothing can decide or resume it later" in stderr
    assert "--resume" not in stderr and "lockgate cancel" not in stderr


@pytest.mark.parametrize("how", ["option", "environment", "sqlite"])
def test_a_gate_left_waiting_in_a_memory_store_offers_no_commands(project, how):
    """``--no-prompt`` on a memory store (or SQLite's ``:memory:``): the gate's decide and resume
    commands would name a run no later command can find, so the run is said to be gone instead
    (exit 3, as for any gate)."""
    (project / "agents.py").write_text(FAST_AGENT)
    store = {"option": ["--store", "memory"], "sqlite": ["--store", "sqlite://:memory:"]}.get(how, [])
    env = {**lockgate_env(), **({"LOCKGATE_STORE": "memory"} if how == "environment" else {})}
    done = subprocess.run(lockgate_argv("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x",
                                        *store, "--no-prompt"), cwd=project, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    assert f"run {run_id} waits at gate 'approve', but it lived in a memory store" in done.stderr
    assert "lockgate gate approve" not in done.stderr and "--resume" not in done.stderr
    assert not (project / ".lockgate").exists()
