"""Two ``lockgate run --resume`` of one run at once: one drives it, the other is refused at once
without calling the agent (exit 4); a drive whose result a consumer answered first drops its own
and goes on from the stored run. Real subprocesses; the agents are held on FIFOs so that the
order of events is fixed by the test."""

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


def test_of_two_resumes_at_once_one_drives_and_the_other_is_refused_without_calling_the_agent(planned):
    cwd, rid = planned
    procs = [resume(cwd, rid), resume(cwd, rid)]
    try:
        (caller,) = read_calls(cwd / "calls", 1, procs)
        (driving,) = [proc for proc in procs if proc.pid == caller]  # a Python agent runs in its command's process
        (refused,) = [proc for proc in procs if proc.pid != caller]
        out2, err2 = refused.communicate(timeout=60)  # on its own, while the other one's agent works
        release(cwd, caller)
        _, err = driving.communicate(timeout=60)
        assert driving.returncode == 3, err  # it carried the run on to the gate
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
    assert refused.returncode == 4, err2
    assert "Traceback" not in err2 and out2 == ""
    assert f"error: run {rid} is being driven by process {caller} on this host" in err2
    engine = Engine(store=open_store(str(cwd / "runs.db")))
    assert engine.status(rid)["status"] == "await_gate"
    engine.close()


def test_a_refused_resume_without_the_module_names_it_in_the_command_it_offers(planned):
    cwd, rid = planned
    driving = resume(cwd, rid)
    try:
        (caller,) = read_calls(cwd / "calls", 1, [driving])
        refused = subprocess.run(lockgate_argv("run", "--resume", rid, "--store", "runs.db", "--no-prompt"),
                                 cwd=cwd, env=lockgate_env(), stdin=subprocess.DEVNULL, capture_output=True,
                                 text=True, timeout=60, check=False)
        release(cwd, caller)
        driving.communicate(timeout=60)
    finally:
        if driving.poll() is None:
            driving.send_signal(signal.SIGKILL)
            driving.communicate()
    assert refused.returncode == 4, refused.stderr
    assert (f"resume here: lockgate run --resume {rid} --agents {cwd / 'agents.py'} --store runs.db"
            in refused.stderr), refused.stderr


def test_a_result_a_consumer_answered_first_is_dropped_and_the_drive_goes_on_from_the_stored_run(planned):
    cwd, rid = planned
    proc = resume(cwd, rid)
    try:
        (caller,) = read_calls(cwd / "calls", 1, [proc])
        engine = Engine(store=open_store(str(cwd / "runs.db")))  # a consumer answering on its own (MCP)
        (dispatch,) = engine.status(rid)["ready"]
        engine.step_done(rid, "draft", {"text": "by the consumer"}, dispatch["token"])
        release(cwd, caller)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
    # it holds the run's claim, so nobody else drives it: it goes on to the gate the run waits at
    assert proc.returncode == 3, err
    assert "Traceback" not in err and json.loads(out)["status"] == "await_gate"
    assert f"lockgate gate approve {rid} review --store runs.db" in err
    audit = json.dumps(engine.audit(rid))
    assert engine.status(rid)["status"] == "await_gate"
    engine.close()
    assert "by the consumer" in audit and f"by {caller}" not in audit
