"""A run whose stored header or step record was edited into JSON of the wrong shape: the commands
reading it say the store was edited or damaged (exit 1), never "internal error", and
``lockgate runs`` keeps listing every run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_runs_cli import cli, gate_run


def edit(db: Path, sql: str, run_id: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, (run_id,))
    conn.close()


@pytest.mark.parametrize("sql", [
    "UPDATE runs SET header = '{}' WHERE run_id = ?",
    "UPDATE steps SET record = '[]' WHERE run_id = ? AND step_id = 'work'",
    "UPDATE steps SET record = '{\"key\": \"work\", \"status\": \"lost\"}' WHERE run_id = ? AND step_id = 'work'",
])
def test_reading_commands_report_the_damage_and_runs_lists_every_run(tmp_path: Path, sql: str) -> None:
    db = tmp_path / "runs.db"
    damaged, other = gate_run(db), gate_run(db)
    edit(db, sql, damaged)
    for command in ("show", "audit", "why", "cancel"):
        code, output = cli(db, command, damaged)
        assert code == 1, (command, output)
        assert output.startswith("error: ") and output.rstrip().endswith("the store was edited or damaged"), output
        assert "internal error" not in output
    code, output = cli(db, "runs")
    assert code == 0 and damaged in output and other in output, output
    code, output = cli(db, "show", other)
    assert code == 0 and "review" in output, output


@pytest.mark.parametrize("sql", [
    "UPDATE runs SET header = '{' WHERE run_id = ?",
    "UPDATE steps SET record = '{' WHERE run_id = ? AND step_id = 'work'",
])
def test_runs_flags_a_run_whose_records_are_not_json_and_lists_the_others(tmp_path: Path, sql: str) -> None:
    """One run whose stored text is not even JSON: ``runs`` (and ``runs --status await_gate``)
    failed for every run with the store's error; it now lists the others and flags that one."""
    db = tmp_path / "runs.db"
    damaged, other = gate_run(db), gate_run(db)
    edit(db, sql, damaged)
    code, output = cli(db, "runs")
    assert code == 0, output
    line = next(line for line in output.splitlines() if line.startswith(damaged))
    assert f"unreadable: its records are damaged (lockgate show {damaged} says how)" in line
    assert other in output
    code, output = cli(db, "runs", "--status", "await_gate")
    assert code == 0 and other in output and damaged not in output, output
