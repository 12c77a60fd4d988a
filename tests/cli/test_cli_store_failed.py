"""The run store failing mid-run (a PostgreSQL server stopped while an agent works): ``lockgate
run`` names the run and the command that says what continues it once the store can be read
(``why``: a resume after an outage, the damage when the store was edited), instead of the store's
error alone. A real server, stopped for real; real subprocesses."""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest
from cli_support import fifo_lines, gate_spec, lockgate_argv, lockgate_env

from lockgate.engine.store.pgserver import TempPostgres
from lockgate.errors import StoreError

# the agent says it started, then waits until the test lets it answer
AGENT = textwrap.dedent('''
    def writer(task):
        with open("started", "w") as fifo:
            fifo.write("started\\n")
        with open("go") as fifo:
            fifo.read()
        return {"text": "done"}
    ''')


def test_a_store_failing_mid_run_leaves_the_command_that_continues_it(tmp_path):
    server = TempPostgres()
    try:
        dsn = server.start()
    except (StoreError, OSError) as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        (tmp_path / "flow.stratum.yaml").write_text(gate_spec())
        (tmp_path / "agents.py").write_text(AGENT)
        for fifo in ("started", "go"):
            os.mkfifo(tmp_path / fifo)
        running = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", "--agents", "agents.py", "--input",
                                                 "topic=t", "--store", dsn, "--no-prompt"),
                                   cwd=tmp_path, env=lockgate_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            fifo_lines(tmp_path / "started", 1, [running])
            server.stop()  # the agent's result now has nowhere to go
            (tmp_path / "go").write_text("go\n")
            _, err = running.communicate(timeout=120)
        finally:
            running.kill()
    finally:
        server.stop()
    assert running.returncode == 1, err
    assert "error: the run store failed: " in err
    assert f"once the store can be read, lockgate why {run_id(err)} --store {dsn} says what continues it" in err
    assert "Traceback" not in err


def run_id(err: str) -> str:
    """The run id a progress line names ("run R is as the store last saved it")."""
    line = next(line for line in err.splitlines() if line.strip().startswith("run ") and "last saved" in line)
    return line.split()[1].rstrip(";")
