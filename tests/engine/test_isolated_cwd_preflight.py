"""An agent whose ``cwd`` keeps the fanout items isolated in git worktrees from running (a folder
outside the repository the worktrees are made from, or one its last commit lacks) is refused
before the run starts, naming the agent and what to change, instead of failing every attempt of
every item. Real git repositories, real command subprocesses, the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gitrepos
import pytest

from lockgate.engine.agents.config import load_config
from lockgate.engine.runner import run
from lockgate.errors import AgentUnavailable

ROOT = Path(__file__).resolve().parents[2]

SPEC = """
version: 1
contracts:
  Done: {item: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${fan.output[0]}", contract: Done}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 2
          isolation: worktree
          require: all
          merge: sequential
          steps:
            - do: "Write ${item}"
              agent: writer
              out: Done
"""

# says it ran (in a log outside every repository), then answers
WRITER = """
import json, os, sys
task = json.load(sys.stdin)
with open(os.environ["RAN_LOG"], "a") as log:
    log.write(os.getcwd() + "\\n")
print(json.dumps({"item": task["prompt"].split()[-1]}))
"""


def repository(path: Path) -> Path:
    return gitrepos.repository(path, {"tools/writer.py": WRITER})


def configure(repo: Path, cwd: Path, log: Path) -> Path:
    """lockgate.toml in ``repo`` with a command agent ``writer`` running in ``cwd``."""
    script = repo / "tools" / "writer.py"
    (repo / "lockgate.toml").write_text(textwrap.dedent(f"""
        [agents.writer]
        type = "command"
        command = [{json.dumps(sys.executable)}, {json.dumps(str(script))}]
        cwd = {json.dumps(str(cwd))}
        env = {{ RAN_LOG = {json.dumps(str(log))} }}
        """))
    return repo / "lockgate.toml"


def worktrees_of(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "worktree", "list", "--porcelain"], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.startswith("worktree ")]


async def refused(repo: Path, cwd: Path, log: Path) -> str:
    config = load_config(configure(repo, cwd, log))
    with pytest.raises(AgentUnavailable) as refusal:
        await run(SPEC, {"items": ["a", "b"]}, workspace=repo, store="memory", config=config)
    assert not log.exists()  # no item ran
    assert len(worktrees_of(repo)) == 1  # and none was checked out: only the repository itself
    return str(refusal.value)


async def test_a_cwd_outside_the_repository_refuses_the_run_before_it_starts(tmp_path):
    repo = repository(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    message = await refused(repo, elsewhere, tmp_path / "ran.log")
    assert message == (
        f"agent 'writer' runs fanout items isolated in git worktrees of {os.path.realpath(repo)}, and its cwd "
        f"{elsewhere} is not in that repository, so they cannot run there: set cwd to a folder of that "
        "repository (an item then runs in the same folder of its worktree), or remove cwd")


async def test_a_cwd_the_last_commit_lacks_refuses_the_run_saying_to_commit_it(tmp_path):
    repo = repository(tmp_path / "repo")
    (repo / "scratch").mkdir()  # in the repository, never committed
    message = await refused(repo, repo / "scratch", tmp_path / "ran.log")
    assert message == (
        f"agent 'writer' runs fanout items isolated in git worktrees of {os.path.realpath(repo)}, and its cwd "
        "'scratch' is not in the repository's last commit, which the worktrees hold: commit that folder "
        "(a file in it), or remove cwd")


async def test_a_committed_folder_of_the_repository_runs(tmp_path):
    repo = repository(tmp_path / "repo")
    log = tmp_path / "ran.log"
    config = load_config(configure(repo, repo / "tools", log))
    result = await run(SPEC, {"items": ["a", "b"]}, workspace=repo, store="memory", config=config)
    assert result.status == "complete", result.response
    ran = log.read_text().splitlines()
    assert len(ran) == 2 and all(folder.endswith(os.sep + "tools") for folder in ran)
    assert all(not folder.startswith(os.path.realpath(repo) + os.sep) for folder in ran)  # their worktrees


def test_the_cli_refuses_the_run_with_one_line(tmp_path):
    repo = repository(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    configure(repo, elsewhere, tmp_path / "ran.log")
    (repo / "spec.stratum.yaml").write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    done = subprocess.run([sys.executable, "-m", "lockgate", "run", "spec.stratum.yaml", "--input", 'items=["a"]',
                           "--store", "memory", "--no-prompt"], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: agent 'writer' runs fanout items isolated in git worktrees of ")
    assert "Traceback" not in done.stderr and not (tmp_path / "ran.log").exists()


async def test_a_consumer_dispatched_fanout_is_not_refused(tmp_path):
    """A ``dispatch: consumer`` fanout gets no worktree from the engine (its consumer places its
    items), so an agent cwd outside the repository is no reason to refuse it (review s12a #3)."""
    repo = repository(tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = tmp_path / "ran.log"
    config = load_config(configure(repo, elsewhere, log))
    spec = SPEC.replace("          isolation: worktree\n", "          isolation: worktree\n          dispatch: consumer\n")
    spec += ("      - id: review\n        after: [fan]\n"  # a consumer's worktrees need a review gate
             "        gate: {on_approve: null, on_revise: null, on_kill: null}\n")
    result = await run(spec, {"items": ["a", "b"]}, workspace=repo, store="memory", config=config)
    assert result.status == "await_gate", result.response  # the items ran: the review waits
    assert log.read_text().splitlines() == [str(elsewhere)] * 2
