"""``lockgate cancel RUN`` from another terminal ends a ``lockgate run`` driving RUN promptly,
even while a synchronous Python agent is blocked in its call (its thread is abandoned, as after
Ctrl-C: nobody wants its answer any more). A program that calls the CLI in-process keeps running
the same way: only the ``lockgate`` process itself ends without joining the thread (an
``os._exit`` there would end the caller's whole process, this test session included)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from cli_support import fifo_lines, lockgate_argv, lockgate_env
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
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
# Says it started, then blocks reading a FIFO nobody writes to: only the process's end stops it.
AGENTS = """
def writer(task):
    with open("started.fifo", "w") as fifo:
        fifo.write("go\\n")
    with open("never.fifo") as fifo:
        fifo.read()
    return {"text": "never"}
"""


def test_a_cancel_from_another_terminal_ends_a_run_blocked_in_a_sync_agent(tmp_path: Path) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    for fifo in ("started.fifo", "never.fifo"):
        os.mkfifo(tmp_path / fifo)
    driving = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", "--agents", "agents.py", "--store",
                                             "runs.db", "--no-prompt"),
                               cwd=tmp_path, env=lockgate_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert fifo_lines(tmp_path / "started.fifo", 1, [driving]) == "go\n"
        engine = Engine(store=open_store(tmp_path / "runs.db"))
        (summary,) = engine.runs()
        engine.close()
        cancel = subprocess.run(lockgate_argv("cancel", summary["run_id"], "--store", "runs.db"), cwd=tmp_path,
                                env=lockgate_env(), capture_output=True, text=True, timeout=60, check=False)
        assert cancel.returncode == 0, cancel.stderr
        started = time.monotonic()
        out, err = driving.communicate(timeout=30)
        assert time.monotonic() - started < 15  # the drive checks every second; the agent never ends
    finally:
        driving.kill()
    assert json.loads(out)["status"] == "cancelled", err
    assert "Traceback" not in err.decode()


# Cancels its own run as another process would, then waits on a FIFO the test writes after the
# command returned (so the thread ends and nothing is left behind).
SELF_CANCELLING = """
from lockgate.engine import Engine
from lockgate.engine.store import open_store

def writer(task):
    engine = Engine(store=open_store("runs.db"))
    engine.cancel(engine.runs()[0]["run_id"], "from elsewhere")
    engine.close()
    with open("release.fifo") as fifo:
        fifo.read()
    return {"text": "late"}
"""


def test_a_run_cancelled_elsewhere_returns_to_an_in_process_caller(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(SELF_CANCELLING)
    os.mkfifo(tmp_path / "release.fifo")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    try:
        result = CliRunner().invoke(main, ["run", "flow.stratum.yaml", "--agents", "agents.py", "--store", "runs.db",
                                           "--no-prompt"])
    finally:  # the agent's thread, still waiting, ends (never blocks: both ends at once)
        fd = os.open(tmp_path / "release.fifo", os.O_RDWR | os.O_NONBLOCK)
        os.write(fd, b"go\n")
        os.close(fd)
    assert result.exit_code == 1, result.output
    assert '"status": "cancelled"' in result.stdout


GATED = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${write.output}", contract: Note}
    steps:
      - {id: write, agent: writer, do: "write", out: Note}
      - id: review
        after: [write]
        gate: {on_approve: null, on_revise: null, on_kill: null}
"""


def test_a_run_cancelled_while_its_gate_prompt_waits_is_not_reported_as_a_kill(tmp_path: Path) -> None:
    import select

    (tmp_path / "flow.stratum.yaml").write_text(GATED)
    (tmp_path / "agents.py").write_text('def writer(task):\n    return {"text": "t"}\n')
    driving = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", "--agents", "agents.py", "--store",
                                             "runs.db"),
                               cwd=tmp_path, env=lockgate_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    said = b""
    try:
        deadline = time.monotonic() + 60
        while b"Decision [a]pprove" not in said:  # the prompt waits on its open stdin
            ready, _, _ = select.select([driving.stderr], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(driving.stderr.fileno(), 65536) if ready else b""
            assert chunk, said
            said += chunk
        engine = Engine(store=open_store(tmp_path / "runs.db"))
        engine.cancel(engine.runs()[0]["run_id"], "from elsewhere")
        engine.close()
        driving.wait(60)  # its stdin kept open (communicate() would close it: end of input)
        out, err = driving.stdout.read(), driving.stderr.read()
    finally:
        driving.kill()
        driving.wait()
        driving.stdin.close()
    shown = (said + err).decode()
    assert json.loads(out)["status"] == "cancelled", shown
    assert "was cancelled elsewhere" in shown, shown
    assert "kill by system" not in shown and "resolved" not in shown, shown  # nobody decided the gate
