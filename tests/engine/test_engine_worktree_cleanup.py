"""Worktrees of engine-dispatch ``isolation: worktree`` items are removed whenever their item
records are dropped (a revise's reset) or their run ends (cancel, failure, a spent flow
budget) with the items in flight (semantics §6.8: "the worktree is always removed"); a late
result of such an item is refused as before, never a crash."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from engine_support import drive

from lockgate.engine import Engine
from lockgate.engine.store import MemoryStore
from lockgate.errors import ConcurrencyConflict, EngineError

SPEC = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {xs: "string[]"}
    output: {from: "${last.output}", contract: Note}
    max_rounds: 2
    budget: {tokens: 100}
    steps:
      - id: first
        do: "first"
        out: Note
      - id: side
        do: "side"
        out: Note
        attempts: 1
      - id: fan
        after: [first]
        fanout:
          over: "${input.xs}"
          concurrency: 2
          isolation: worktree
          require: all
          merge: sequential
          steps:
            - do: "work ${item}"
              out: Note
      - id: ok
        after: [first]
        gate: {on_approve: null, on_revise: first, on_kill: null}
      - id: last
        after: [fan, ok, side]
        do: "last"
        out: Note
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "base.txt").write_text("base\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


def linked(repo: Path) -> list[str]:
    """The worktrees git knows of besides the repository's own."""
    return [line.split()[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")][1:]


def ready(engine: Engine, run: str) -> dict[str, dict[str, Any]]:
    return {e["step_id"]: e for e in engine.status(run)["ready"]}


def items_in_flight(engine: Engine, repo: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """A run whose fanout has both items issued, each in a worktree of its own."""
    first = engine.plan(SPEC, {"xs": ["a", "b"]})
    run = first["run_id"]
    engine.step_done(run, "first", {"text": "f"}, ready(engine, run)["first"]["token"])
    entries = ready(engine, run)
    cwds = [entries[k]["cwd"] for k in ("fan/0", "fan/1")]
    assert sorted(linked(repo)) == sorted(cwds) and all(Path(c).is_dir() for c in cwds)
    return run, entries


def assert_removed(repo: Path, entries: dict[str, dict[str, Any]]) -> None:
    assert linked(repo) == []
    assert not any(Path(entries[k]["cwd"]).exists() for k in ("fan/0", "fan/1"))


def write_and_echo(entry: dict[str, Any]) -> dict[str, str]:
    if entry["step_id"].startswith("fan/"):
        (Path(entry["cwd"]) / f"{entry['item']}.txt").write_text(f"made by {entry['item']}\n")
    return {"text": entry["step_id"]}


def test_a_revise_that_resets_the_fanout_removes_its_items_worktrees(repo: Path) -> None:
    engine = Engine(workspace=repo)
    run, entries = items_in_flight(engine, repo)
    gate = engine.status(run)["gates"][0]
    engine.gate_resolve(run, "ok", "revise", "again", "me", gate["token"])
    assert_removed(repo, entries)
    version = engine.audit(run)["version"]
    with pytest.raises(EngineError):  # the item's record was dropped with its worktree: refused
        engine.step_done(run, "fan/0", {"text": "a"}, entries["fan/0"]["token"])
    assert engine.audit(run)["version"] == version
    done = drive(engine, run, write_and_echo)
    assert done["status"] == "complete" and linked(repo) == []
    assert (repo / "a.txt").read_text() == "made by a\n" and (repo / "b.txt").read_text() == "made by b\n"


def test_a_revise_replayed_after_a_conflict_removes_them_once(repo: Path) -> None:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run, entries = items_in_flight(engine, repo)
    save, conflicts = store.save_run, []

    def conflicting(*args: Any, **kwargs: Any) -> int:
        if not conflicts:
            conflicts.append(True)
            raise ConcurrencyConflict("another writer was first", run_id=run)
        return save(*args, **kwargs)

    store.save_run = conflicting  # type: ignore[method-assign]
    gate = engine.status(run)["gates"][0]
    engine.gate_resolve(run, "ok", "revise", "again", "me", gate["token"])
    assert conflicts and linked(repo) == []
    assert {t["step_id"]: t["status"] for t in engine.audit(run)["trace"]}["fan"] == "pending"
    assert drive(engine, run, write_and_echo)["status"] == "complete"


def test_a_revise_refused_on_its_replay_leaves_the_worktrees_of_the_items_still_in_flight(repo: Path) -> None:
    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run, entries = items_in_flight(engine, repo)
    gate = engine.status(run)["gates"][0]
    save, raced = store.save_run, []

    def approved_elsewhere_first(*args: Any, **kwargs: Any) -> int:
        if not raced:  # another writer approves the gate just before this revise is saved
            raced.append(True)
            Engine(store=store, workspace=repo).gate_resolve(run, "ok", "approve", "fine", "them", gate["token"])
        return save(*args, **kwargs)

    store.save_run = approved_elsewhere_first  # type: ignore[method-assign]
    with pytest.raises(EngineError):  # replayed on the approved gate: its token is spent
        engine.gate_resolve(run, "ok", "revise", "again", "me", gate["token"])
    store.save_run = save  # type: ignore[method-assign]
    assert sorted(linked(repo)) == sorted(entries[k]["cwd"] for k in ("fan/0", "fan/1"))  # still in use
    assert drive(engine, run, write_and_echo)["status"] == "complete" and linked(repo) == []
    assert (repo / "a.txt").read_text() == "made by a\n"


def test_worktrees_a_crash_left_after_a_revise_committed_are_removed_by_the_resume(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lockgate.engine import engine as engine_module

    store = MemoryStore()
    engine = Engine(store=store, workspace=repo)
    run, entries = items_in_flight(engine, repo)
    gate = engine.status(run)["gates"][0]

    def killed(run: Any) -> None:  # the process dies between the commit and the removal
        raise KeyboardInterrupt

    monkeypatch.setattr(engine_module, "_remove_released", killed)
    with pytest.raises(KeyboardInterrupt):
        engine.gate_resolve(run, "ok", "revise", "again", "me", gate["token"])
    monkeypatch.undo()
    assert len(linked(repo)) == 2  # left on disk

    Engine(store=store, workspace=repo).resume(run)

    assert_removed(repo, entries)


def test_a_cancel_removes_the_worktrees_of_the_items_in_flight(repo: Path) -> None:
    engine = Engine(workspace=repo)
    run, entries = items_in_flight(engine, repo)
    assert engine.cancel(run, "stop")["status"] == "cancelled"
    assert_removed(repo, entries)
    with pytest.raises(EngineError) as late:
        engine.step_done(run, "fan/1", {"text": "b"}, entries["fan/1"]["token"])
    assert late.value.error_type == "run_cancelled"


def test_a_run_that_fails_removes_them_and_still_records_a_late_spend(repo: Path) -> None:
    engine = Engine(workspace=repo)
    run, entries = items_in_flight(engine, repo)
    ended = engine.step_done(run, "side", None, entries["side"]["token"], failure="boom")
    assert ended["status"] == "error" and ended["error_type"] == "retries_exhausted"
    assert_removed(repo, entries)
    with pytest.raises(EngineError) as late:
        engine.step_done(run, "fan/0", {"text": "a"}, entries["fan/0"]["token"], usage={"tokens": 7})
    assert late.value.error_type == "run_finished"
    assert engine.audit(run)["spent"]["tokens"] == 7


def test_a_flow_budget_spent_inside_the_fanout_removes_every_items_worktree(repo: Path) -> None:
    engine = Engine(workspace=repo)
    run, entries = items_in_flight(engine, repo)
    (Path(entries["fan/0"]["cwd"]) / "a.txt").write_text("a\n")
    ended = engine.step_done(run, "fan/0", {"text": "a"}, entries["fan/0"]["token"], usage={"tokens": 101})
    assert ended["status"] == "error" and ended["error_type"] == "budget_exhausted"
    assert_removed(repo, entries)
    assert not (repo / "a.txt").exists()

