"""An ``isolation: worktree`` item's patch is taken against the commit its worktree was created
from, so work the item's agent committed there reaches the workspace along with what it left
uncommitted or untracked (agents such as Claude Code and Codex commit as they go). A worktree
with no recorded base (made by an older engine) is diffed against its HEAD as before."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from engine_support import drive

from lockgate.engine import Engine, worktrees

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


def git(cwd: Path | str, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def commit(cwd: Path | str, message: str) -> None:
    git(cwd, "add", "-A")
    git(cwd, "-c", "user.email=agent@example.com", "-c", "user.name=agent", "commit", "-qm", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "base.txt").write_text("base\n")
    (root / "gone.txt").write_text("to delete\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


def run_items(repo: Path, work: Callable[[Path, str], None]) -> dict[str, Any]:
    """Run SPEC over items a and b, each item doing ``work(cwd, item)`` in its worktree."""
    engine = Engine(workspace=repo)
    run = engine.plan(SPEC, {"xs": ["a", "b"]})["run_id"]

    def agent(entry: dict[str, Any]) -> dict[str, str]:
        work(Path(entry["cwd"]), entry["item"])
        return {"text": entry["item"]}

    done = drive(engine, run, agent)
    merged = [e["detail"] for e in engine.audit(run)["events"] if e["type"] == "fanout_merge"]
    return {"status": done["status"], "merged": merged}


def test_work_an_item_committed_in_its_worktree_is_merged(repo: Path) -> None:
    def committing(cwd: Path, item: str) -> None:
        (cwd / f"{item}.txt").write_text(f"made by {item}\n")
        if item == "a":
            (cwd / "gone.txt").unlink()
        commit(cwd, f"add {item}")

    out = run_items(repo, committing)
    assert out["status"] == "complete"
    assert out["merged"] == [{"items": [0, 1]}]
    assert (repo / "a.txt").read_text() == "made by a\n" and (repo / "b.txt").read_text() == "made by b\n"
    assert not (repo / "gone.txt").exists()
    assert sorted(git(repo, "status", "--short").splitlines()) == ["A  a.txt", "A  b.txt", "D  gone.txt"]


def test_committed_uncommitted_and_untracked_work_all_reach_the_workspace(repo: Path) -> None:
    def mixed(cwd: Path, item: str) -> None:
        (cwd / f"{item}-committed.txt").write_text("c\n")
        commit(cwd, "first")
        (cwd / f"{item}-second.txt").write_text("second commit\n")
        commit(cwd, "second")
        if item == "a":
            (cwd / "base.txt").write_text("base\nedited, not committed\n")
        (cwd / f"{item}-untracked.txt").write_text("u\n")

    out = run_items(repo, mixed)
    assert out["status"] == "complete" and out["merged"] == [{"items": [0, 1]}]
    for item in ("a", "b"):
        for kind in ("committed", "second", "untracked"):
            assert (repo / f"{item}-{kind}.txt").is_file(), f"{item}-{kind}.txt"
    assert (repo / "base.txt").read_text() == "base\nedited, not committed\n"
    assert git(repo, "log", "--format=%s") == "base\n"  # the items' commits are not the workspace's


def test_the_recorded_base_is_the_worktrees_own_and_goes_with_it(repo: Path) -> None:
    tree = worktrees.ensure(repo, None)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git(tree, "rev-parse", worktrees.BASE_REF).strip() == head
    assert git(repo, "for-each-ref", "--format=%(refname)").split() == [git(repo, "symbolic-ref", "HEAD").strip()]
    (Path(tree) / "new.txt").write_text("n\n")
    commit(tree, "item work")
    assert "new.txt" in worktrees.capture_patch(tree)
    worktrees.remove(repo, tree)
    assert not Path(tree).exists()
    assert "worktree" not in git(repo, "for-each-ref", "--format=%(refname)")


def test_a_worktree_without_a_recorded_base_is_diffed_against_its_head(repo: Path) -> None:
    tree = worktrees.ensure(repo, None)
    git(tree, "update-ref", "-d", worktrees.BASE_REF)  # as an older engine made it
    (Path(tree) / "committed.txt").write_text("c\n")
    commit(tree, "committed")
    (Path(tree) / "loose.txt").write_text("l\n")
    patch = worktrees.capture_patch(tree)
    assert "loose.txt" in patch and "committed.txt" not in patch
    assert worktrees.ensure(repo, tree) == tree  # an existing worktree is taken as it is
    worktrees.remove(repo, tree)
