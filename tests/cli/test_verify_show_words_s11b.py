"""What ``lockgate verify`` and ``lockgate show`` say they do (review s11, findings 4, 7, 11):
verify says that it checked the event log only, not the run's current state (an edit of the
run's row alone leaves the chain intact); a broken chain with no event to blame is worded
without a Python ``None``; show's help promises no more than it prints."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from cli_support import lockgate_argv, lockgate_env
from test_runs_cli import gate_run

NOT_CHECKED = ("checked: the event log only; the run's current state (its status, output and step records, "
               "as show and runs print them) is not hashed and was not checked\n")


def lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True, text=True,
                          timeout=120, check=False)


def _edit(db: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)
    conn.close()


def test_verify_says_the_run_state_is_not_checked_when_only_the_run_row_was_edited(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = gate_run(db)
    _edit(db, "UPDATE runs SET status = 'failed' WHERE run_id = ?", run)
    assert f"{run}  reviewed  failed" in lockgate(tmp_path, "runs", "--status", "failed", "--store", str(db)).stdout
    done = lockgate(tmp_path, "verify", run, "--store", str(db))
    assert done.returncode == 0
    assert done.stdout == f"run {run}: audit chain intact (4 events)\n" + NOT_CHECKED


def test_verify_help_says_what_it_checks_and_what_it_does_not(tmp_path: Path) -> None:
    shown = " ".join(lockgate(tmp_path, "verify", "--help").stdout.split())
    assert "Check a run's event log against its hash chain" in shown
    assert ("The run's current state (its status, output and step records, as `show` and `runs` print them) is "
            "not hashed, so it is not checked: an edit of that alone is not detected.") in shown


def test_a_broken_chain_with_no_event_to_blame_names_none(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = gate_run(db)
    _edit(db, "UPDATE runs SET event_count = 'lots' WHERE run_id = ?", run)
    done = lockgate(tmp_path, "verify", run, "--store", str(db))
    assert done.returncode == 1
    assert done.stdout == (f"run {run}: audit chain BROKEN (edited): the run's recorded event count 'lots' is not a "
                           "number: its row was edited\n")


def test_show_help_sends_to_why_for_what_a_run_waits_on(tmp_path: Path) -> None:
    shown = " ".join(lockgate(tmp_path, "show", "--help").stdout.split())
    assert "Show a run: its status, spend, output, and every step (`lockgate why RUN` says what it waits on)." in shown
    assert "and every step." not in shown
