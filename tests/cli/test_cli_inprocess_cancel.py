"""A program that calls the CLI in-process (click's test runner here) keeps running when a run
is cancelled from elsewhere while a synchronous agent is still in its call: the command returns
without waiting for the agent's thread, and only the ``lockgate`` process itself would end
without joining it (an ``os._exit`` here would end this test session)."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from lockgate.cli import main

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
# Cancels its own run as another process would, then waits on a FIFO the test writes after the
# command returned (so the thread ends and nothing is left behind).
AGENTS = """
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
    (tmp_path / "agents.py").write_text(AGENTS)
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
