"""Commands about an existing run, typed in a folder where no run was started, say so and name
the store they looked in; none of them creates a store there (``lockgate run --resume`` did)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return tmp_path


@pytest.mark.parametrize("args", [["run", "--resume", "abc123"], ["show", "abc123"], ["why", "abc123"]])
def test_a_run_looked_for_in_the_wrong_folder(elsewhere: Path, args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "no run with id 'abc123' in" in result.stderr and "no run was started in this folder" in result.stderr
    assert "pass --store" in result.stderr
    assert not (elsewhere / ".lockgate").exists()


def test_runs_in_the_wrong_folder_says_there_is_no_store_here(elsewhere: Path) -> None:
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 0 and result.stdout.startswith("no runs (no run store here:")
    assert not (elsewhere / ".lockgate").exists()


FOREIGN_COMMANDS = [["runs"], ["show", "abc123"], ["verify", "abc123"], ["why", "abc123"],
                    ["run", "--resume", "abc123"], ["run", "flow.stratum.yaml", "--no-prompt"]]


@pytest.mark.parametrize("args", FOREIGN_COMMANDS, ids=lambda args: " ".join(args[:2]))
def test_another_programs_database_is_refused_and_left_as_it_was(elsewhere: Path, args: list[str]) -> None:
    """--store naming some other program's SQLite database: refused, naming its tables, and not
    a byte of it changed (opening it as a store switched it to WAL and created Lockgate's tables
    in it, then answered "no runs"; review s8-r6 #2)."""
    import sqlite3

    app = elsewhere / "app.db"
    with sqlite3.connect(app) as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO users (name) VALUES ('ada')")
    db.close()
    (elsewhere / "flow.stratum.yaml").write_text(
        'version: 1\ncontracts: {R: {v: string}}\nflows:\n  entry: main\n  main:\n    input: {}\n'
        '    output: {from: "${a.output}", contract: R}\n    steps: [{id: a, set: {v: "\'x\'"}, out: R}]\n')
    before = app.read_bytes()
    result = CliRunner().invoke(main, [*args, "--store", str(app)])
    assert result.exit_code != 0
    assert f"{app} is an SQLite database but not a Lockgate run store (its tables: users)" in result.stderr
    assert app.read_bytes() == before and sorted(p.name for p in elsewhere.iterdir()) == ["app.db", "flow.stratum.yaml"]
