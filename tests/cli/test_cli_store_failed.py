"""The run store failing mid-run, while an agent works: ``lockgate run`` names the run and what
continues it instead of the store's error alone. A store that could not be reached (a PostgreSQL
server stopped) leaves the run intact: the exact resume command continues it once the store is
back. A store found edited or damaged (a table dropped from the SQLite file) is pointed at
``why``, which says what is wrong. Real servers and files, changed for real; real subprocesses."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

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


def run_until_the_store_fails(tmp_path: Path, store: str, fail: Callable[[], None]) -> tuple[int, str]:
    """Run the flow on ``store``; while its agent works, ``fail`` the store; then let the agent
    answer, so that its result has nowhere to go. (exit status, stderr)"""
    (tmp_path / "flow.stratum.yaml").write_text(gate_spec())
    (tmp_path / "agents.py").write_text(AGENT)
    for fifo in ("started", "go"):
        os.mkfifo(tmp_path / fifo)
    running = subprocess.Popen(lockgate_argv("run", "flow.stratum.yaml", "--agents", "agents.py", "--input",
                                             "topic=t", "--store", store, "--no-prompt"),
                               cwd=tmp_path, env=lockgate_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        fifo_lines(tmp_path / "started", 1, [running])
        fail()
        (tmp_path / "go").write_text("go\n")
        _, err = running.communicate(timeout=120)
    finally:
        running.kill()
    return running.returncode, err


def test_a_store_stopped_mid_run_leaves_the_command_that_resumes_the_run(tmp_path: Path) -> None:
    server = TempPostgres()
    try:
        dsn = server.start()
    except (StoreError, OSError) as exc:
        pytest.skip(f"no PostgreSQL server could be started: {exc}")
    try:
        code, err = run_until_the_store_fails(tmp_path, dsn, server.stop)
    finally:
        server.stop()
    assert code == 1, err
    assert "error: the run store could not be reached: " in err
    run = run_id(err)
    assert (f"once the store is back, continue it with: lockgate run --resume {run} --agents agents.py "
            f"--store {dsn}") in err
    assert "lockgate why" not in err and "Traceback" not in err


def test_a_store_found_damaged_mid_run_points_at_why(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"

    def drop_a_table() -> None:
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TABLE steps")
        conn.close()

    code, err = run_until_the_store_fails(tmp_path, str(db), drop_a_table)
    assert code == 1, err
    assert "error: the run store failed: " in err and "no such table: steps" in err
    assert f"once the store can be read, lockgate why {run_id(err)} --store {db} says what continues it" in err
    assert "--resume" not in err and "Traceback" not in err


def run_id(err: str) -> str:
    """The run id a progress line names ("run R is as the store last saved it")."""
    line = next(line for line in err.splitlines() if line.strip().startswith("run ") and "last saved" in line)
    return line.split()[1].rstrip(";")
