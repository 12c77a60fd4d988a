"""A run held by a process that does not drive it, for the tests of what the other commands
say about that process: a flow whose gate g1 releases the evaluate step c1 (its command logs its
shell's pid to ``ran`` and answers what the test writes to the FIFO ``verdict``) beside step x,
whose agent says it started and, once cancelled (Ctrl-C), runs on until the test writes the FIFO
``release``; and real ``lockgate`` processes started on it."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from processes import GUARD_S

ROOT = Path(__file__).resolve().parents[1]
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


def env() -> dict[str, str]:
    """The environment of a ``lockgate`` process: this checkout, no store from the environment."""
    out = {**os.environ, "PYTHONPATH": str(ROOT)}
    out.pop("LOCKGATE_STORE", None)
    return out


def started(folder: Path, *args: str) -> subprocess.Popen[str]:
    """``lockgate ARGS...`` started in ``folder``, as in a terminal."""
    return subprocess.Popen([sys.executable, "-m", "lockgate", *args], cwd=folder, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def project(folder: Path) -> None:
    """The flow, its agents module and the two FIFOs in ``folder``."""
    (folder / "flow.stratum.yaml").write_text(SPEC)
    (folder / "agents.py").write_text(AGENTS)
    for fifo in ("verdict", "release"):
        os.mkfifo(folder / fifo)


def write_fifo(path: Path, text: str) -> None:
    """Write ``text`` to FIFO ``path`` if something reads it now (else nothing: it never will)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        assert exc.errno == errno.ENXIO
        return
    with os.fdopen(fd, "w") as fifo:
        fifo.write(text)


@contextmanager
def until_released(proc: subprocess.Popen[str], fifo: Path, text: str) -> Iterator[subprocess.Popen[str]]:
    """``proc``, ended at the end: ``text`` written to the ``fifo`` it waits on, then killed if
    it still runs (a failed test leaves no process behind)."""
    try:
        yield proc
    finally:
        write_fifo(fifo, text)
        try:
            proc.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
