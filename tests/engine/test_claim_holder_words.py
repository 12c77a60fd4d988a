"""What ``resume``, ``why``, ``runs`` and the MCP server's guidance say about the process holding
a run when it does not drive it: one that only runs an evaluate command (``lockgate gate
approve``) leaves the dispatched steps to nobody until a resume after it, and one whose drive is
stopping (Ctrl-C) starts nothing more and keeps a resume out until it has exited. Once it has,
``runs`` says a step is left with nobody at it besides the waiting gate.

Every process is real: ``lockgate run``, ``gate approve``, ``resume``, ``why`` and ``runs`` run
as in a terminal; the command and the agent wait on FIFOs the test writes."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from processes import GUARD_S, wait_until

from lockgate.engine import Engine
from lockgate.engine.store import open_store

ROOT = Path(__file__).resolve().parents[2]
SPEC = """version: 1
contracts:
  Note: {text: string}
  Verdict: {status: string, children: array, reason: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${c1.output}", contract: Verdict}
    steps:
      - id: g1
        gate: {on_approve: c1, on_revise: null, on_kill: null}
      - {id: c1, evaluate: {command: "cat > /dev/null; echo $$ >> ran; cat verdict", timeout_ms: 60000}, out: Verdict}
      - {id: x, agent: slow, do: "slow", out: Note}
"""
#: x's agent says it started, and once cancelled (Ctrl-C) runs on until the test writes ``release``
AGENTS = """
import asyncio

async def slow(task):
    open("started", "w").write(task.run_id)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        released = asyncio.ensure_future(asyncio.to_thread(lambda: open("release").read()))
        while not released.done():
            try:
                await asyncio.shield(released)
            except asyncio.CancelledError:
                continue
        raise
    return {"text": "never"}
"""
VERDICT = '{"status": "closed", "children": [], "reason": "ok"}'
STORE = ("--store", "runs.db")


def lockgate(folder: Path, *args: str) -> str:
    """What ``lockgate ARGS...`` prints (stdout), run to its end in ``folder``."""
    done = subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=folder, env=_env(), capture_output=True,
                          text=True, timeout=GUARD_S * 4, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def started(folder: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "lockgate", *args], cwd=folder, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    return env


def _project(folder: Path) -> None:
    (folder / "flow.stratum.yaml").write_text(SPEC)
    (folder / "agents.py").write_text(AGENTS)
    for fifo in ("verdict", "release"):
        os.mkfifo(folder / fifo)


def _write_fifo(path: Path, text: str) -> None:
    """Write ``text`` to FIFO ``path`` if something reads it now (else nothing: it never will)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        assert exc.errno == errno.ENXIO
        return
    with os.fdopen(fd, "w") as fifo:
        fifo.write(text)


@contextmanager
def ended(proc: subprocess.Popen[str], fifo: Path, text: str) -> Iterator[subprocess.Popen[str]]:
    """``proc``, ended at the end: ``text`` written to the ``fifo`` it waits on, then killed if
    it still runs (a failed test leaves no process behind)."""
    try:
        yield proc
    finally:
        _write_fifo(fifo, text)
        try:
            proc.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_a_process_running_only_a_command_is_not_called_the_runs_driver(tmp_path: Path) -> None:
    from lockgate.mcp.server import call_tool, make_context

    _project(tmp_path)
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(SPEC, {})["run_id"]  # x dispatched, g1 waiting: nobody drives it
    with ended(started(tmp_path, "gate", "approve", run_id, "g1", *STORE), tmp_path / "verdict", VERDICT) as approve:
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
    _project(tmp_path)
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run = started(tmp_path, "run", "flow.stratum.yaml", "--agents", "agents.py", *STORE, "--no-prompt")
    with ended(run, tmp_path / "release", "go"):
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
