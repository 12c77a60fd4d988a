"""An engine-dispatch ``isolation: worktree`` fanout whose workspace cannot give its items git
worktrees (not a git repository, a repository with no commit yet) fails at once, saying why,
before any item's agent is called; so does a workspace that is a folder inside a repository."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine_support import drive

from lockgate.engine import Engine

SPEC = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {xs: "string[]"}
    output: {from: "${fan.output[0]}", contract: Note}
    steps:
      - id: fan
        fanout:
          over: "${input.xs}"
          concurrency: 2
          isolation: worktree
          require: all
          merge: sequential
          steps:
            - do: "work ${item}"
              out: Note
"""


def never_called(entry: Mapping[str, Any]) -> Any:
    raise AssertionError(f"an agent was called for {entry['step_id']}")


def ended(workspace: Path) -> dict[str, Any]:
    engine = Engine(workspace=workspace)
    run = engine.plan(SPEC, {"xs": ["a", "b"]})["run_id"]
    return drive(engine, run, never_called)


def test_a_workspace_that_is_not_a_git_repository_fails_the_fanout_at_once(tmp_path: Path) -> None:
    done = ended(tmp_path)
    assert done["status"] == "error" and done["step_id"] == "fan"
    assert done["message"] == (f"isolation: worktree needs a git repository with a commit: the workspace {tmp_path} "
                               "is not a git repository (git init and commit first)")


def test_a_repository_with_no_commit_fails_the_fanout_at_once(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("a\n")
    done = ended(tmp_path)
    assert done["status"] == "error"
    assert done["message"] == (f"isolation: worktree needs a git repository with a commit: the git repository "
                               f"{tmp_path} has no commit yet (the item worktrees start from HEAD: commit first)")


def test_a_workspace_inside_a_repository_fails_the_fanout_at_once(tmp_path: Path) -> None:
    """An item's patch spans the repository; applied in a folder of it, the changes made outside
    that folder were left out, silently."""
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "base"], check=True)
    done = ended(tmp_path / "sub")
    assert done["status"] == "error"
    top = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--show-toplevel"], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert done["message"] == (f"isolation: worktree needs a git repository with a commit: the workspace "
                               f"{tmp_path / 'sub'} is a folder inside the git repository {top}: items change the "
                               f"whole repository, so run from its top level ({top}) or give that as the workspace")
