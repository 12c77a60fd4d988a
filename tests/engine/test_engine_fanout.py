"""Fanout: consumer and engine dispatch, concurrency, stages, require, worktree isolation."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from engine_support import Fail, Script, drive
from specs import fan_spec

from lockgate.engine import Engine

ECHO = Script({"fan/*": lambda e: {"word": e["item"]}})


def test_consumer_dispatch_issues_at_most_concurrency_items() -> None:
    engine = Engine()
    first = engine.plan(fan_spec(concurrency=2), {"words": ["a", "b", "c", "d"]})
    assert [r["step_id"] for r in first["ready"]] == ["fan/0", "fan/1"]
    entry = first["ready"][0]
    assert entry["kind"] == "fanout_item" and entry["item"] == "a" and entry["item_count"] == 4
    assert entry["dispatch"] == "consumer" and entry["is_final_stage"] is True
    nxt = engine.step_done(first["run_id"], "fan/0", {"word": "a"}, entry["token"])
    assert [r["step_id"] for r in nxt["ready"]] == ["fan/2"]
    done = drive(engine, first["run_id"], ECHO)
    assert done["status"] == "complete" and done["output"] == {"word": "a"}
    fan = {t["step_id"]: t for t in engine.audit(first["run_id"])["trace"]}["fan"]
    assert fan["output"] == [{"word": w} for w in "abcd"]


def test_item_stages_pass_prev_and_a_skipped_final_stage_skips_the_item() -> None:
    stages = """            - do: "Pick ${item}"
              out: Word
            - do: "Refine ${prev}"
              when: "item != 'skip'"
              out: Word
"""
    engine = Engine()
    run = engine.plan(fan_spec(stages=stages, require="any"), {"words": ["x", "skip"]})["run_id"]
    tasks = []

    def agent(entry):
        tasks.append(entry["task"])
        return {"word": entry["item"] + str(entry["stage"])}

    done = drive(engine, run, Script({"fan/*": agent}))
    assert done["output"] == {"word": "x1"}
    assert 'Refine {"word":"x0"}' in tasks
    trace = {t["step_id"]: t for t in engine.audit(run)["trace"]}
    assert trace["fan/1"]["status"] == "skipped" and trace["fan"]["output"] == [{"word": "x1"}, None]


def test_a_stage_that_succeeds_on_retry_leaves_no_failure_behind() -> None:
    """The next stage's first dispatch carries no previous failure, and the finished item's
    trace none either (as a plain step's success clears its failure)."""
    stages = """            - do: "Pick ${item}"
              out: Word
            - do: "Refine ${prev}"
              out: Word
"""
    engine = Engine()
    run = engine.plan(fan_spec(stages=stages), {"words": ["x"]})["run_id"]
    seen = []

    def agent(entry):
        seen.append((entry["stage"], entry["attempt"], entry.get("previous_failure")))
        return Fail("flaky") if (entry["stage"], entry["attempt"]) == (0, 1) else {"word": "x"}

    done = drive(engine, run, Script({"fan/*": agent}))
    assert done["status"] == "complete"
    assert [(stage, attempt) for stage, attempt, _ in seen] == [(0, 1), (0, 2), (1, 1)]
    assert seen[1][2]["reason"] == "agent reported failure: flaky" and seen[2][2] is None
    item = {t["step_id"]: t for t in engine.audit(run)["trace"]}["fan/0"]
    assert item["status"] == "succeeded" and item.get("failure") is None


@pytest.mark.parametrize("require, words, ok", [
    ("all", ["a", "b"], True), ("all", ["a", "bad"], False), ("any", ["a", "bad"], True),
    ("any", ["bad", "bad"], False), ("2", ["a", "b", "bad"], True), ("2", ["a", "bad", "bad"], False),
])
def test_require_counts_succeeded_items(require: str, words: list[str], ok: bool) -> None:
    engine = Engine()
    run = engine.plan(fan_spec(require=require), {"words": words})["run_id"]
    done = drive(engine, run, Script({"fan/*": lambda e: {"word": "nope" if e["item"] == "bad" else e["item"]}}))
    fan = {t["step_id"]: t for t in engine.audit(run)["trace"]}["fan"]
    if ok:
        assert fan["status"] == "succeeded"
    else:
        assert fan["status"] == "failed" and "not met" in fan["failure"]["reason"]
        assert done["error_type"] == "retries_exhausted"


def test_empty_over_satisfies_all_but_not_any() -> None:
    engine = Engine()
    spec = fan_spec().replace('"${fan.output[0]}"', '"${after.output}"').replace(
        "          steps:\n", "          steps:\n", 1) + """      - id: after
        after: [fan]
        do: "after"
        out: Word
"""
    run = engine.plan(spec, {"words": []})["run_id"]
    assert drive(engine, run, Script({"after": [{"word": "z"}]}))["status"] == "complete"
    run = engine.plan(spec.replace("require: all", "require: any"), {"words": []})["run_id"]
    assert engine.status(run)["error_type"] == "retries_exhausted"


def test_item_stage_retries_up_to_its_attempts() -> None:
    engine = Engine()
    run = engine.plan(fan_spec(), {"words": ["a"]})["run_id"]
    agent = Script({"fan/0": [Fail("flaky"), {"word": "a"}]})
    assert drive(engine, run, agent)["status"] == "complete"
    assert agent.calls == ["fan/0", "fan/0"]


def test_the_event_that_ends_an_item_says_how_it_ended() -> None:
    stages = """            - do: "Pick ${item}"
              out: Word
              ensure:
                - expr: "result.word != 'bad'"
            - do: "Refine ${prev}"
              when: "item != 'skip'"
              out: Word
"""
    engine = Engine()
    run = engine.plan(fan_spec(stages=stages, require="any"), {"words": ["ok", "skip", "bad"]})["run_id"]
    drive(engine, run, Script({"fan/*": lambda e: {"word": e["item"]}}))
    events = [e for e in engine.audit(run)["events"] if e["step_id"] and e["step_id"].startswith("fan/")]
    ends = [(e["step_id"], e["type"], e["detail"]["done"]) for e in events if "done" in e["detail"]]
    assert sorted(ends) == [("fan/0", "fanout_attempt_result", "succeeded"),
                            ("fan/1", "fanout_item_skipped", "skipped"),
                            ("fan/2", "fanout_attempt_result", "failed")]
    assert [e["detail"]["stage"] for e in events if e["step_id"] == "fan/0" and "done" in e["detail"]] == [1]


def test_engine_dispatch_runs_items_through_a_sync_dispatcher() -> None:
    seen = []

    def dispatcher(entry):
        seen.append(entry["step_id"])
        return {"word": entry["item"]}

    engine = Engine(dispatcher=dispatcher)
    done = engine.plan(fan_spec(dispatch="engine"), {"words": ["a", "b", "c"]})
    assert done["status"] == "complete"
    assert seen == ["fan/0", "fan/1", "fan/2"]


class AsyncAgent:
    """An agent with the protocol's ``async execute(task)``; records concurrency."""

    name = "echo"

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0

    async def execute(self, task):
        from lockgate.engine.agents.base import AgentResult

        self.running += 1
        self.peak = max(self.peak, self.running)
        await asyncio.sleep(0)
        self.running -= 1
        word = task.prompt.removeprefix("Shout ")
        return AgentResult.success({"word": word}) if word != "bad" else AgentResult.failed("refused")


def test_engine_dispatch_runs_agents_concurrently_within_the_limit() -> None:
    agent = AsyncAgent()
    engine = Engine(dispatcher=agent)
    done = engine.plan(fan_spec(dispatch="engine", concurrency=3, require="any"), {"words": ["a", "bad", "c", "d"]})
    assert done["status"] == "complete"
    assert agent.peak == 3
    fan = {t["step_id"]: t for t in engine.audit(done["run_id"])["trace"]}
    assert fan["fan/1"]["status"] == "failed" and fan["fan/1"]["attempts"] == 2


def test_engine_dispatch_items_are_issued_to_a_consumer_without_a_dispatcher() -> None:
    engine = Engine()
    first = engine.plan(fan_spec(dispatch="engine"), {"words": ["a", "b"]})
    assert {r["dispatch"] for r in first["ready"]} == {"engine"}
    assert drive(engine, first["run_id"], ECHO)["status"] == "complete"


# -- worktree isolation ----------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "shared.txt").write_text("base\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


def write_in_worktree(entry) -> dict:
    cwd = Path(entry["cwd"])
    (cwd / f"{entry['item']}.txt").write_text(f"made by {entry['item']}\n")
    return {"word": entry["item"]}


def test_worktree_items_work_in_isolation_and_merge_in_order(repo: Path) -> None:
    cwds = []

    def dispatcher(entry):
        cwds.append(entry["cwd"])
        assert not (Path(entry["cwd"]) / "a.txt").exists() or entry["item"] == "a"
        return write_in_worktree(entry)

    engine = Engine(workspace=repo, dispatcher=dispatcher)
    done = engine.plan(fan_spec(dispatch="engine", isolation="worktree"), {"words": ["a", "b"]})
    assert done["status"] == "complete"
    assert len(set(cwds)) == 2 and str(repo) not in cwds
    assert (repo / "a.txt").read_text() == "made by a\n" and (repo / "b.txt").read_text() == "made by b\n"
    assert all(not Path(c).exists() for c in cwds)
    assert "a.txt" in git(repo, "diff", "--cached", "--name-only")


def test_an_item_whose_patch_cannot_be_taken_fails_that_attempt_once(repo: Path) -> None:
    calls = []

    def dispatcher(entry):
        calls.append(entry["item"])
        if entry["item"] == "gone" and calls.count("gone") == 1:
            shutil.rmtree(entry["cwd"])  # the agent wrecked its worktree: no patch to take
            return {"word": "gone"}
        return write_in_worktree(entry)

    engine = Engine(workspace=repo, dispatcher=dispatcher)
    done = engine.plan(fan_spec(dispatch="engine", isolation="worktree"), {"words": ["a", "gone"]})
    assert done["status"] == "complete" and calls.count("gone") == 2
    item = engine._get(done["run_id"]).steps["fan/1"]
    assert [("failure" in r, r["attempt"]) for r in item.attempts] == [(True, 1), (False, 2)]
    assert item.attempts[0]["failure"]["kind"] == "worktree"
    results = [e for e in engine.audit(done["run_id"])["events"]
               if e["type"] == "fanout_attempt_result" and e["step_id"] == "fan/1"]
    assert [("failure" in e["detail"], e["detail"].get("done")) for e in results] == [(True, None), (False, "succeeded")]


def test_conflicting_patches_fail_the_run_at_merge(repo: Path) -> None:
    def dispatcher(entry):
        (Path(entry["cwd"]) / "shared.txt").write_text(f"changed by {entry['item']}\n")
        return {"word": entry["item"]}

    engine = Engine(workspace=repo, dispatcher=dispatcher)
    done = engine.plan(fan_spec(dispatch="engine", isolation="worktree"), {"words": ["a", "b"]})
    assert done["status"] == "error" and done["error_type"] == "merge_failed"
    run_id = done["run_id"]
    assert done["message"] == (
        "fanout merge failed at item 1, applied in part: its changes conflict with those merged before it in "
        "'shared.txt'; its other changes are staged. Merged before it: items [0]. The patches of items [1] are "
        f"saved in {repo}/.lockgate/unmerged/{run_id}. Resolve the conflicts in 'shared.txt' (git's markers are "
        "there; or keep what was merged before it with `git checkout --ours -- <file>`), then `git add` them "
        "(item 1's patch is saved for reference: applying it again recreates the conflicts)")
    saved = (repo / ".lockgate" / "unmerged" / run_id / "item-1.patch").read_text()
    assert "+changed by b" in saved


def test_a_merge_stopped_by_a_conflict_saves_the_patches_it_did_not_take(repo: Path) -> None:
    def dispatcher(entry):
        name = "c.txt" if entry["item"] == "c" else "shared.txt"
        (Path(entry["cwd"]) / name).write_text(f"changed by {entry['item']}\n")
        return {"word": entry["item"]}

    engine = Engine(workspace=repo, dispatcher=dispatcher)
    done = engine.plan(fan_spec(dispatch="engine", isolation="worktree"), {"words": ["a", "b", "c"]})
    assert done["error_type"] == "merge_failed"
    assert "Merged before it: items [0]; not merged: items [2]. The patches of items [1, 2] are saved" in done["message"]
    saved = repo / ".lockgate" / "unmerged" / done["run_id"]
    assert sorted(p.name for p in saved.iterdir()) == ["item-1.patch", "item-2.patch"]
    assert not (repo / "c.txt").exists()  # item 2 was not merged: its patch is where the message says
    subprocess.run(["git", "apply", str(saved / "item-2.patch")], cwd=repo, check=True)
    assert (repo / "c.txt").read_text() == "changed by c\n"
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True)
    assert ".lockgate" not in status.stdout  # kept out of git: a `git add -A` while resolving leaves it out


def test_unmet_require_leaves_the_workspace_untouched(repo: Path) -> None:
    def dispatcher(entry):
        write_in_worktree(entry)
        return {"word": "wrong"}

    engine = Engine(workspace=repo, dispatcher=dispatcher)
    done = engine.plan(fan_spec(dispatch="engine", isolation="worktree"), {"words": ["a"]})
    assert done["status"] == "error"
    assert not (repo / "a.txt").exists()
    assert git(repo, "worktree", "list").count("\n") == 1


def test_a_failing_pre_merge_command_fails_the_fanout(repo: Path) -> None:
    spec = fan_spec(dispatch="engine", isolation="worktree", pre_merge="          pre_merge:\n            - \"exit 3\"\n")
    engine = Engine(workspace=repo, dispatcher=write_in_worktree)
    done = engine.plan(spec, {"words": ["a"]})
    assert done["status"] == "error" and "pre_merge command 'exit 3' exited 3" in done["message"]
    assert not (repo / "a.txt").exists()


def test_worktree_isolation_outside_a_git_repository_fails_the_fanout_at_once(tmp_path: Path) -> None:
    calls: list[Any] = []
    engine = Engine(workspace=tmp_path, dispatcher=lambda entry: calls.append(entry) or write_in_worktree(entry))
    done = engine.plan(fan_spec(dispatch="engine", isolation="worktree"), {"words": ["a"]})
    assert done["status"] == "error" and calls == []  # no agent called, no attempt wasted
    assert done["message"] == (f"isolation: worktree needs a git repository with a commit: the workspace {tmp_path} "
                               "is not a git repository (git init and commit first)")


def test_a_later_failed_merge_of_the_run_leaves_only_its_own_patches(tmp_path: Path) -> None:
    from lockgate.engine import worktrees

    worktrees.save_patches(tmp_path, "r1", {1: "first attempt's b\n", 2: "c\n"})
    folder = worktrees.save_patches(tmp_path, "r1", {2: "second attempt's c\n"})
    assert sorted(p.name for p in folder.iterdir()) == ["item-2.patch"]  # item 1 merged this time
    assert (folder / "item-2.patch").read_text() == "second attempt's c\n"
