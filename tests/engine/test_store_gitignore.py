"""The default run store lives in the project's ``.lockgate`` folder, which keeps itself out of
the project's git: ``git status`` does not list the database, and ``git add -A`` does not commit
it. A store elsewhere, or a ``.gitignore`` the user wrote there, is left alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lockgate.engine.store import open_store


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_the_default_store_is_not_part_of_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    open_store(None).close()
    assert (tmp_path / ".lockgate" / "lockgate.db").exists()
    assert git(tmp_path, "status", "--porcelain", "--untracked-files=all") == ""
    git(tmp_path, "add", "-A")
    assert git(tmp_path, "diff", "--cached", "--name-only") == ""


def test_a_users_own_gitignore_and_other_folders_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".lockgate").mkdir()
    (tmp_path / ".lockgate" / ".gitignore").write_text("lockgate.db\n")
    open_store(str(tmp_path / ".lockgate" / "lockgate.db")).close()
    assert (tmp_path / ".lockgate" / ".gitignore").read_text() == "lockgate.db\n"
    open_store(str(tmp_path / "runs" / "team.db")).close()
    assert not (tmp_path / "runs" / ".gitignore").exists()
