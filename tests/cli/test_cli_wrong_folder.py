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
