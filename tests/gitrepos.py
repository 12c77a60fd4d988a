"""Real git repositories for tests: a command runner and a repository with files committed."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its stdout (a failing command fails the test)."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def repository(path: Path, files: dict[str, str]) -> Path:
    """A new git repository at ``path`` with ``files`` (relative name -> text) committed."""
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"]):
        git(path, *args)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-qm", "base")
    return path
