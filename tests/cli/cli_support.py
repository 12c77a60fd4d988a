"""What several CLI test modules share: the draft-then-gate spec, a project folder to run the
CLI in, how to start the real ``lockgate`` command in a subprocess, and reading what its agents
write on a FIFO. Imported by bare name (``from cli_support import ...``):
pytest puts this folder on the import path, as it does for tests/kernel_ext/kernel_session.py."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def gate_spec(gate: str = "review", *, revise_to: str | None = None, flow_rounds: int = 2,
              gate_rounds: int | None = None) -> str:
    """A flow whose agent ``writer`` drafts (contract Draft, from input ``topic``), then gate
    ``gate`` reviews the draft; ``revise_to`` is where a revise goes (with ``flow_rounds``
    rounds at most, and the gate's own ``gate_rounds`` when given), None to end the flow."""
    rounds = f"    max_rounds: {flow_rounds}\n" if revise_to else ""
    gate_limit = f"\n          max_rounds: {gate_rounds}" if gate_rounds is not None else ""
    return f"""version: 1
contracts:
  Draft:
    text: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${{draft.output}}"
      contract: Draft
{rounds}    steps:
      - id: draft
        do: "Write about ${{input.topic}}"
        agent: writer
        out: Draft
      - id: {gate}
        after: [draft]
        gate:
          on_approve: null
          on_revise: {revise_to or "null"}
          on_kill: null{gate_limit}
"""


def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, agents: str) -> Path:
    """``tmp_path`` as the project an in-process CLI test runs in: the current folder, with no
    store taken from the environment, ``spec`` in flow.stratum.yaml and ``agents`` in agents.py."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    (tmp_path / "flow.stratum.yaml").write_text(spec)
    (tmp_path / "agents.py").write_text(agents)
    return tmp_path


def lockgate_env() -> dict[str, str]:
    """The environment for a ``lockgate`` subprocess: this checkout importable, and neither a
    store nor debug output taken from the environment the tests run in."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    env.pop("LOCKGATE_DEBUG", None)
    return env


def lockgate_argv(*args: str) -> list[str]:
    """The command line that runs ``lockgate ARGS...`` with this Python."""
    return [sys.executable, "-m", "lockgate", *args]


def fifo_lines(path: Path, count: int, procs: list[subprocess.Popen], timeout: float = 60) -> str:
    """The first ``count`` lines agents write on FIFO ``path``; the test fails instead of waiting
    forever when one of ``procs`` ends (or ``timeout`` seconds pass) first."""
    fd = os.open(path, os.O_RDWR)  # never waits for a writer, never reads end of file
    try:
        data, deadline = b"", time.monotonic() + timeout
        while data.count(b"\n") < count:
            ended = [p for p in procs if p.poll() is not None]
            if ended:
                pytest.fail(f"a command ended before its agent wrote to {path.name}: {ended[0].communicate()}")
            assert time.monotonic() < deadline, f"no agent wrote to {path.name} within {timeout:g} s"
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                data += os.read(fd, 4096)
        return data.decode()
    finally:
        os.close(fd)
