"""A store path starting with ``~`` names the home folder in every command, as a shell would
expand it (a config file's path was never seen by one); ``~user`` of no user is a plain error."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.engine import Engine
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Note}
    steps:
      - {id: a, do: "write", out: Note}
"""


def test_every_command_reads_the_store_a_tilde_path_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    engine = Engine(store=open_store("~/runs.db"))
    run_id = engine.plan(SPEC, {})["run_id"]
    engine.close()
    assert (tmp_path / "home" / "runs.db").exists()
    listed = CliRunner().invoke(main, ["runs", "--store", "~/runs.db"])
    assert listed.exit_code == 0 and run_id in listed.output, listed.output
    monkeypatch.setenv("LOCKGATE_STORE", "~/runs.db")
    assert run_id in CliRunner().invoke(main, ["why", run_id]).output


def test_a_tilde_path_of_no_user_is_an_error_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["runs", "--store", "~no-such-user-here/runs.db"])
    assert result.exit_code != 0 and "internal error" not in result.output, result.output
    assert "cannot find the folder '~no-such-user-here' names in the store path" in result.output, result.output
