"""Two ``lockgate run --resume`` of one run at once: both call the agent for the step waiting;
the process whose result is accepted second says another process is driving the run (nothing
was lost) and exits 4, instead of an internal error with exit status 1. Real subprocesses; the
agents are held on FIFOs so that the order of the two results is fixed by the test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest
from cli_support import fifo_lines, gate_spec, lockgate_argv, lockgate_env

from lockgate.dsl.loader import load
from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store

SPEC = gate_spec()

# each call announces its pid on the "calls" FIFO, then waits until the test writes to its own
AGENTS = textwrap.dedent('''
    import os

    def writer(task):
        go = f"go-{os.getpid()}"
        os.mkfifo(go)
        with open("calls", "w") as calls:
            calls.write(f"{os.getpid()}\\n")
        with open(go) as fifo:
            fifo.read()
        return {"text": f"by {os.getpid()}"}
    ''')


@pytest.fixture
def planned(tmp_path):
    """A run of SPEC whose first step is dispatched and nobody is driving: (directory, run id)."""
    (tmp_path / "agents.py").write_text(AGENTS)
    os.mkfifo(tmp_path / "calls")
    engine = Engine(store=open_store(str(tmp_path / "runs.db")))
    rid = engine.plan(load(SPEC).spec, {"topic": "x"})["run_id"]
    engine.close()
    return tmp_path, rid


def resume(cwd: Path, rid: str) -> subprocess.Popen:
    return subprocess.Popen(
        lockgate_argv("run", "--resume", rid, "--agents", "agents.py", "--store", "runs.db",
                      "--no-prompt"), cwd=cwd, env=lockgate_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_calls(path: Path, count: int, procs: list[subprocess.Popen]) -> list[int]:
    """The pids of the first ``count`` agent calls."""
    return [int(line) for line in fifo_lines(path, count, procs).split()]


def release(cwd: Path, pid: int) -> None:
    with open(cwd / f"go-{pid}", "w") as fifo:
        fifo.write("go\n")


def test_the_second_result_is_reported_as_another_process_driving(planned):
    cwd, rid = planned
    procs = [resume(cwd, rid), resume(cwd, rid)]
    try:
        called = read_calls(cwd / "calls", 2, procs)
        by_pid = {proc.pid: proc for proc in procs}  # a Python agent runs in its command's process
        first, second = (by_pid[pid] for pid in called)
        release(cwd, called[0])
        _, err = first.communicate(timeout=60)
        assert first.returncode == 3, err  # it carried the run on to the gate
        release(cwd, called[1])
        out2, err2 = second.communicate(timeout=60)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
    assert second.returncode == 4, err2
    assert "Traceback" not in err2 and "no work to do" not in err2
    assert err2.strip().splitlines()[-1] == (
        f"another process is driving run {rid} (step 'draft' was answered or reset there first); "
        f"nothing was lost: see `lockgate show {rid} --store runs.db`")
    assert out2 == ""
    # the accepted result is the first one's, and the run waits at its gate
    engine = Engine(store=open_store(str(cwd / "runs.db")))
    status = engine.status(rid)
    audit = engine.audit(rid)
    engine.close()
    assert status["status"] == "await_gate"
    assert json.dumps(audit).count(f"by {called[0]}") >= 1
    assert f"by {called[1]}" not in json.dumps(audit)
