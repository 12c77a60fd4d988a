"""The runner's judge bridge: a transition abandoned for a verdict is replayed without redoing
what it did outside the store, each question is charged once, and the judge is asked as the step
it judges, in that step's directory."""

from __future__ import annotations

import asyncio
import subprocess
import textwrap
from pathlib import Path

import pytest

from lockgate.engine.agents import AgentResult, Task
from lockgate.engine.agents.base import Usage
from lockgate.engine.engine import Engine
from lockgate.engine.runner import run

WORKTREE_FAN = textwrap.dedent("""
    version: 1
    contracts:
      Note:
        text: string
    flows:
      entry: main
      main:
        input:
          items: string[]
        output:
          from: "${after.output}"
          contract: Note
        steps:
          - id: fan
            fanout:
              over: "${input.items}"
              concurrency: 2
              isolation: worktree
              require: all
              merge: sequential
              steps:
                - do: "write ${item}"
                  agent: writer
                  out: Note
          - id: after
            after: [fan]
            set:
              text: "'done'"
            out: Note
            ensure:
              - judged:
                  statement: "the batch is fine"
""").lstrip()

TWICE = textwrap.dedent("""
    version: 1
    contracts:
      Note:
        text: string
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${draft.output}"
          contract: Note
        steps:
          - id: draft
            do: "Draft ${input.topic}"
            agent: writer
            out: Note
            ensure:
              - judged:
                  statement: "polite"
              - judged:
                  statement: "polite"
""").lstrip()


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for args in (("init", "-q"), ("config", "user.email", "t@example.com"), ("config", "user.name", "t")):
        git(root, *args)
    (root / "base.txt").write_text("base\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


def write_item(task: Task) -> dict:
    name = task.prompt.split()[-1]
    Path(task.cwd or ".", f"{name}.txt").write_text(f"{name}\n")
    return {"text": name}


class JudgeAgent:
    """An agent judge recording which step it was asked about, and where."""

    name = "reviewer"

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None, bool]] = []

    async def execute(self, task: Task) -> AgentResult:
        self.asked.append((task.step_id, task.cwd, Path(task.cwd or "/nonexistent").is_dir()))
        return AgentResult.success({"holds": True, "reason": "fine"}, usage=Usage(tokens=7))

    async def cancel(self) -> None:
        pass


def test_a_judged_step_after_a_worktree_fanout_merges_once(repo: Path) -> None:
    engine = Engine(workspace=repo)
    result = asyncio.run(run(WORKTREE_FAN, {"items": ["a", "b"]}, agents={"writer": write_item}, engine=engine,
                             workspace=repo, judge=lambda *_: {"holds": True, "reason": "ok"}))
    assert result.status == "complete", engine.audit(result.run_id)["failure"]
    assert sorted(git(repo, "diff", "--cached", "--name-only").split()) == ["a.txt", "b.txt"]
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # every item worktree removed
    merges = [e for e in engine.audit(result.run_id)["events"] if e["type"] == "fanout_merge"]
    assert len(merges) == 1


def test_the_judge_is_asked_as_the_step_it_judges_in_its_directory(repo: Path) -> None:
    judge = JudgeAgent()
    engine = Engine(workspace=repo)
    result = asyncio.run(run(WORKTREE_FAN, {"items": ["a"]}, agents={"writer": write_item}, engine=engine,
                             workspace=repo, judge=judge))
    assert result.status == "complete"
    assert judge.asked == [("after", str(repo), True)]
    assert engine.audit(result.run_id)["spent"]["tokens"] == 7


def test_one_question_asked_twice_in_a_transition_is_charged_once() -> None:
    calls = []

    def judge(statement, stakes, result, input):
        calls.append(statement)
        return {"holds": True, "reason": "ok", "usage": {"tokens": 10}}

    engine = Engine()
    result = asyncio.run(run(TWICE, {"topic": "x"}, agents={"writer": lambda t: {"text": "hi"}}, engine=engine,
                             judge=judge))
    audit = engine.audit(result.run_id)
    assert result.status == "complete" and calls == ["polite"]
    assert audit["spent"]["tokens"] == 10
    assert [e["detail"].get("usage") for e in audit["events"] if e["type"] == "judged"] == [{"tokens": 10}, None]
