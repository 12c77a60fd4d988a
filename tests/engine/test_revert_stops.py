"""A revert made in another process withdraws the issuance of a command (or agent call) that is
running: the process running it stops it within a second or so, as it does on a cancel, rather
than let it run to its end (or timeout) while its step's new issuance runs beside or behind it.
The run goes on from the checkpoint, and the re-issued step's command runs afresh exactly once.

The commands are real processes (the built-in runner); the drive and the deciding caller run in
processes of their own, like ``lockgate run`` and ``lockgate gate approve`` in two terminals."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from processes import GUARD_S, kill_written, reaped, running, written_pid
from specs import note_flow

from lockgate.engine import Engine
from lockgate.engine.agents import Task
from lockgate.engine.runner import run
from lockgate.engine.store import open_store

#: How soon a withdrawn command must be gone: its watcher looks every second, and a killed
#: ``sleep`` ends at SIGTERM; the command itself would sleep on for a minute.
STOPPED_WITHIN_S = 10.0

#: The first run of the command (while ``hold`` exists) writes its pid and sleeps a minute (a
#: ``stubborn`` one ignoring SIGTERM: it takes SIGKILL, after a grace longer than a watch's
#: period); a run after ``hold`` is removed answers at once. Every run appends its pid to ``ran``.
CHECK = """        evaluate:
          command: |
            cat > /dev/null; echo $$ >> ran
            if [ -e stubborn ]; then trap '' TERM; fi
            if [ -e hold ]; then echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 60; fi
            echo '{"status": "closed", "children": [], "reason": "afresh"}'
          timeout_ms: 120000
        out: Verdict
"""
#: the run then waits at ``last`` (no one answers it), rather than end: the end of a run stops
#: whatever still runs for it, withdrawn or not
LAST = "      - {id: last, after: [check], gate: {on_approve: null, on_revise: null, on_kill: null}}\n"
DRIVEN = note_flow("      - id: check\n" + CHECK + LAST, output="check", contract="Verdict")
DECIDED = note_flow("      - {id: g, gate: {on_approve: check, on_revise: null, on_kill: null}}\n"
                    "      - id: check\n" + CHECK + LAST, output="check", contract="Verdict")

#: ``lockgate run`` in a terminal: drives the spec through the runner (to ``last``).
DRIVE = """import asyncio, json, sys
from lockgate.engine import Engine
from lockgate.engine.runner import run
from lockgate.engine.store import open_store
engine = Engine(store=open_store(sys.argv[1]), workspace=sys.argv[2])
result = asyncio.run(run(open(sys.argv[3]).read(), {}, engine=engine))
print(json.dumps({"status": result.status, "output": result.output}))
"""
#: ``lockgate gate approve`` in a terminal (or the MCP server): the engine runs the command the
#: decision starts itself, under a claim of the run.
DECIDE = """import json, sys
from lockgate.engine import Engine
from lockgate.engine.store import open_store
engine = Engine(store=open_store(sys.argv[1]), workspace=sys.argv[2])
out = engine.resolve_waiting_gate(sys.argv[3], "g", "approve")
print(json.dumps({"status": out["status"], "output": out.get("output")}))
"""


class Serialised:
    """An engine whose calls are serialised under a lock it leaves while a command runs, as the
    MCP server serves concurrent tool calls."""

    def __init__(self, engine: Engine) -> None:
        self.engine, self.lock = engine, threading.Lock()
        engine.around_commands = self._unlocked

    @contextmanager
    def _unlocked(self, call: Any) -> Iterator[None]:
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()

    def call(self, method: str, *args: Any) -> Any:
        with self.lock:
            return getattr(self.engine, method)(*args)

    def start(self, method: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=self.call, args=(method, *args))
        thread.start()
        return thread


@contextmanager
def process(where: Path, script: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``script`` running in a Python process of its own, in ``where``; killed on the way out if
    it still runs, with the command it may have left (a failing test must not leak a sleep)."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], cwd=where, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with reaped(child, where / "pid"):
        yield child


def first_command(where: Path) -> int:
    """The pid of the command's first run, once it has started."""
    return written_pid(where / "pid", "the command to start")


def gone_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ends within ``seconds`` (looked at until then, not slept)."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def revert_meanwhile(where: Path, run_id: str) -> dict[str, Any]:
    """Another terminal: checkpoint the run while its command runs, let a new run of the command
    answer at once, and revert to the checkpoint (which issues the command's step again)."""
    other = Engine(store=open_store(where / "runs.db"), workspace=where)
    try:
        other.commit(run_id, "mid-check")
        (where / "hold").unlink()
        return other.revert(run_id, "mid-check")
    finally:
        other.close()


def finished(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = child.communicate(timeout=GUARD_S)
    assert child.returncode == 0, err
    return json.loads(out)


def went_on_afresh(where: Path, run_id: str) -> None:
    """The run went on from the checkpoint: its command's step settled by the command's new run,
    it waits at ``last``."""
    engine = Engine(store=open_store(where / "runs.db"))
    (check,) = [t for t in engine.audit(run_id)["trace"] if t["step_id"] == "check"]
    assert check["status"] == "succeeded" and check["output"]["reason"] == "afresh"
    assert [g["step_id"] for g in engine.status(run_id)["gates"]] == ["last"]
    engine.close()


def ran_once_afresh(where: Path, first: int) -> None:
    """The command ran twice in all: the run withdrawn, and one run of the new issuance."""
    runs = [int(line) for line in (where / "ran").read_text().split()]
    assert runs[0] == first and len(runs) == 2 and runs[1] != first, runs


@pytest.mark.parametrize("stubborn", [False, True], ids=["sleep", "ignoring SIGTERM"])
def test_a_revert_elsewhere_stops_the_command_a_drive_runs(tmp_path: Path, stubborn: bool) -> None:
    (tmp_path / "spec.yaml").write_text(DRIVEN)
    (tmp_path / "hold").touch()
    if stubborn:
        (tmp_path / "stubborn").touch()
    with process(tmp_path, DRIVE, str(tmp_path / "runs.db"), str(tmp_path), str(tmp_path / "spec.yaml")) as driving:
        first = first_command(tmp_path)
        reader = Engine(store=open_store(tmp_path / "runs.db"))
        (summary,) = reader.runs()
        reader.close()
        reverted = revert_meanwhile(tmp_path, summary["run_id"])
        assert reverted["driven_by"]  # the new issuance is the drive's to run
        assert gone_within(first, STOPPED_WITHIN_S), "the withdrawn command ran on"
        result = finished(driving)
    assert result["status"] == "await_gate"
    went_on_afresh(tmp_path, summary["run_id"])
    ran_once_afresh(tmp_path, first)


@pytest.mark.parametrize("stubborn", [False, True], ids=["sleep", "ignoring SIGTERM"])
def test_a_revert_elsewhere_stops_the_command_a_deciding_caller_runs(tmp_path: Path, stubborn: bool) -> None:
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(DECIDED, {})["run_id"]
    (tmp_path / "hold").touch()
    if stubborn:
        (tmp_path / "stubborn").touch()
    with process(tmp_path, DECIDE, str(tmp_path / "runs.db"), str(tmp_path), run_id) as deciding:
        first = first_command(tmp_path)
        reverted = revert_meanwhile(tmp_path, run_id)
        assert reverted["commands_by"]  # the caller holds the run: the new issuance is its to run
        assert gone_within(first, STOPPED_WITHIN_S), "the withdrawn command ran on"
        assert finished(deciding)["status"] == "await_gate"
    went_on_afresh(tmp_path, run_id)
    ran_once_afresh(tmp_path, first)
    engine.close()


def test_a_revert_through_the_engine_running_the_command_stops_it(tmp_path: Path) -> None:
    """The MCP server: one engine serves a decision (its command running, the lock left) and the
    revert; the revert's call runs the new issuance's command under the claim it shares."""
    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    run_id = engine.plan(DECIDED, {})["run_id"]
    (tmp_path / "hold").touch()
    server = Serialised(engine)
    deciding = server.start("resolve_waiting_gate", run_id, "g", "approve")
    try:
        first = first_command(tmp_path)
        server.call("commit", run_id, "mid-check")
        (tmp_path / "hold").unlink()
        assert server.call("revert", run_id, "mid-check")["status"] == "await_gate"
        assert gone_within(first, STOPPED_WITHIN_S), "the withdrawn command ran on"
        deciding.join(GUARD_S)
        assert not deciding.is_alive()
        went_on_afresh(tmp_path, run_id)
        ran_once_afresh(tmp_path, first)
    finally:
        kill_written(tmp_path / "pid")
        deciding.join(GUARD_S)
        engine.close()


async def test_a_revert_elsewhere_stops_the_agent_call_a_drive_makes(tmp_path: Path) -> None:
    """The drive stops agent calls on a cancel; one whose dispatch a revert withdrew is stopped
    the same way, and the agent is called once for the new dispatch."""
    calls: list[str] = []
    started, stopped = asyncio.Event(), asyncio.Event()

    async def writer(task: Task) -> dict[str, Any]:
        calls.append(task.step_id)
        if len(calls) > 1:
            return {"text": "afresh"}
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise
        return {"text": "never"}

    engine = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
    spec = note_flow('      - {id: write, agent: writer, do: "write", out: Note}\n'
                     "      - {id: g, after: [write], gate: {on_approve: null, on_revise: null, on_kill: null}}\n",
                     output="write")
    async with asyncio.timeout(GUARD_S):
        driving = asyncio.ensure_future(run(spec, {}, engine=engine, agents={"writer": writer}))
        await started.wait()
        (summary,) = engine.runs()
        other = Engine(store=open_store(tmp_path / "runs.db"), workspace=tmp_path)
        other.commit(summary["run_id"], "mid-call")
        assert other.revert(summary["run_id"], "mid-call")["driven_by"]
        other.close()
        await asyncio.wait_for(stopped.wait(), STOPPED_WITHIN_S)
        result = await driving
    assert result.status == "await_gate" and calls == ["write", "write"]
    (write,) = [t for t in engine.audit(result.run_id)["trace"] if t["step_id"] == "write"]
    assert write["output"] == {"text": "afresh"}
    engine.close()
