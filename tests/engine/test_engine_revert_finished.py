"""A run that ended (failed, killed, out of flow budget) while a fanout was running can be
reverted to a checkpoint taken before the fanout and run to completion (semantics §6.14, §8.22:
reverting a failed run revives it); its fanout is not in flight any more, so a commit is taken
too. While the run runs, a fanout in flight still refuses both."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from engine_support import drive

from lockgate.engine import Engine
from lockgate.errors import EngineError

PARALLEL = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {xs: "string[]"}
    output: {from: "${last.output}", contract: Note}
    steps:
      - id: side
        do: "side"
        out: Note
        attempts: 1
      - id: first
        do: "first"
        out: Note
      - id: fan
        after: [first]
        fanout:
          over: "${input.xs}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          dispatch: consumer
          steps:
            - do: "work ${item}"
              out: Note
      - id: ok
        gate: {on_approve: null, on_revise: null, on_kill: null}
      - id: last
        after: [fan, side, ok]
        do: "last"
        out: Note
"""

BUDGETED = """
version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input: {xs: "string[]"}
    output: {from: "${last.output}", contract: Note}
    budget: {tokens: 5}
    steps:
      - id: first
        do: "first"
        out: Note
      - id: fan
        after: [first]
        fanout:
          over: "${input.xs}"
          concurrency: 2
          isolation: none
          require: any
          merge: sequential
          dispatch: consumer
          steps:
            - do: "work ${item}"
              out: Note
      - id: last
        after: [fan]
        do: "last"
        out: Note
"""


def echo(entry: dict[str, Any]) -> dict[str, str]:
    return {"text": entry["step_id"]}


def ready(engine: Engine, run: str) -> dict[str, dict[str, Any]]:
    return {e["step_id"]: e for e in engine.status(run)["ready"]}


def statuses(engine: Engine, run: str) -> dict[str, str]:
    return {t["step_id"]: t["status"] for t in engine.audit(run)["trace"]}


def mid_fanout(engine: Engine, spec: str = PARALLEL) -> str:
    """A run committed as ``start``, with its fanout running (item 0 issued)."""
    run = engine.plan(spec, {"xs": ["a", "b"]})["run_id"]
    engine.commit(run, "start")
    engine.step_done(run, "first", {"text": "f"}, ready(engine, run)["first"]["token"])
    assert statuses(engine, run)["fan"] == "running" and "fan/0" in ready(engine, run)
    return run


def revived(engine: Engine, run: str, label: str = "start") -> None:
    """Revert ``run`` to ``label`` and drive it to completion."""
    back = engine.revert(run, label)
    assert back["reverted_to"] == label and back["status"] != "error"
    assert statuses(engine, run)["fan"] == "pending"
    done = drive(engine, run, echo)
    assert done["status"] == "complete" and done["output"] == {"text": "last"}


def test_a_parallel_step_out_of_retries_mid_fanout_can_be_reverted(engine: Engine) -> None:
    run = mid_fanout(engine)
    ended = engine.step_done(run, "side", None, ready(engine, run)["side"]["token"], failure="boom")
    assert ended["status"] == "error" and ended["error_type"] == "retries_exhausted"
    assert statuses(engine, run)["fan"] == "running"  # left as it was, like the waiting gate
    revived(engine, run)


def test_a_parallel_gate_killed_mid_fanout_can_be_reverted(engine: Engine) -> None:
    run = mid_fanout(engine)
    gate = engine.status(run)["gates"][0]
    assert engine.gate_resolve(run, "ok", "kill", "no", "me", gate["token"])["status"] == "killed"
    revived(engine, run)


def test_a_flow_budget_spent_inside_the_fanout_can_be_reverted_and_committed(engine: Engine) -> None:
    run = mid_fanout(engine, BUDGETED)
    ended = engine.step_done(run, "fan/0", {"text": "a"}, ready(engine, run)["fan/0"]["token"],
                             usage={"tokens": 6})
    assert ended["status"] == "error" and ended["error_type"] == "budget_exhausted"
    assert engine.commit(run, "ended")["status"] == "committed"
    back = engine.revert(run, "start")
    assert back["reverted_to"] == "start" and back["status"] == "execute_step"  # the run lives again
    # spend is not rolled back (semantics §6.14), and a ledger spent past a limit refuses the
    # next dispatch (§6.10): the revived run stops at the fanout's first item
    again = drive(engine, run, echo)
    assert again["status"] == "error" and again["error_type"] == "budget_exhausted"
    assert again["message"] == "flow budget exhausted: tokens 6 spent of 5"
    assert engine.audit(run)["spent"]["tokens"] == 6
    assert engine.revert(run, "ended")["status"] == "error"  # a snapshot of the ended run stays ended
    assert statuses(engine, run)["fan"] == "running"


def test_a_fanout_in_flight_still_refuses_checkpoints_while_the_run_runs(engine: Engine) -> None:
    run = mid_fanout(engine)
    for call in (lambda: engine.commit(run, "mid"), lambda: engine.revert(run, "start")):
        with pytest.raises(EngineError) as caught:
            call()
        assert caught.value.error_type == "fanout_in_flight"


def test_an_unreleased_consumer_worktree_fanout_does_not_pin_an_ended_run(engine: Engine) -> None:
    spec = PARALLEL.replace("isolation: none", "isolation: worktree").replace(
        "      - id: ok\n", "      - id: ok\n        after: [fan]\n")
    run = engine.plan(spec, {"xs": ["a"]})["run_id"]
    engine.commit(run, "start")
    engine.step_done(run, "first", {"text": "f"}, ready(engine, run)["first"]["token"])
    engine.step_done(run, "fan/0", {"text": "a"}, ready(engine, run)["fan/0"]["token"])
    with pytest.raises(EngineError, match="successor gate"):  # the consumer's worktrees are open
        engine.commit(run, "mid")
    ended = engine.step_done(run, "side", None, ready(engine, run)["side"]["token"], failure="boom")
    assert ended["status"] == "error" and statuses(engine, run)["ok"] == "waiting_gate"
    revived(engine, run)


# -- worktrees ---------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def test_a_revert_removes_worktrees_left_by_items_it_drops(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (("init", "-q"), ("config", "user.email", "t@example.com"), ("config", "user.name", "t")):
        git(repo, *args)
    (repo / "base.txt").write_text("base\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    engine = Engine(workspace=repo)
    run = mid_fanout(engine, PARALLEL.replace("isolation: none", "isolation: worktree")
                     .replace("dispatch: consumer", "dispatch: engine"))
    left = ready(engine, run)["fan/0"]["cwd"]
    engine.step_done(run, "side", None, ready(engine, run)["side"]["token"], failure="boom")
    assert not Path(left).exists()
    git(repo, "worktree", "add", "--detach", left, "HEAD")  # as a crash (or an older engine) left it
    assert engine.revert(run, "start")["reverted_to"] == "start"
    assert not Path(left).exists() and git(repo, "worktree", "list").count("\n") == 1
