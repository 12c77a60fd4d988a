"""The command adapter after review s11: an isolated fanout item runs in its worktree even when
the agent has a ``cwd`` (#2); the program is looked for on the agent's own ``env.PATH`` (#4);
a script the command names is read beside lockgate.toml, from any folder, and a missing one is
refused before the run (#5); JSON printed on stderr is shown when stdout has none (#8); and a
call stopped again while its group is being terminated still kills the group (#1). Real
subprocesses, a real git repository and worktrees, the real CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lockgate.engine import worktrees
from lockgate.engine.agents import CommandAgent, Task
from lockgate.engine.agents.config import load_config
from lockgate.engine.agents.process import ProcessGroup
from lockgate.engine.runner import run
from lockgate.errors import AgentUnavailable

from agent_support import pid_alive, write_script
from gitrepos import git, repository

ROOT = Path(__file__).resolve().parents[2]

FANOUT = """
version: 1
contracts:
  Where: {item: string, ran_in: string, task_cwd: string}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${fan.output[0]}", contract: Where}
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
              out: Where
"""

# works in its current folder, as agents do, and says where that was
WRITER = """
import json, os, sys
task = json.load(sys.stdin)
item = task["prompt"].split()[-1]
with open(f"out-{item}.txt", "w") as out:
    out.write(item)
where = {"item": item, "ran_in": os.getcwd(), "task_cwd": task["cwd"]}
with open(os.environ["WHERE_LOG"], "a") as log:
    log.write(json.dumps(where) + "\\n")
print(json.dumps(where))
"""

WHERE = """
import json, os, sys
json.load(sys.stdin)
print(json.dumps({"ran_in": os.getcwd()}))
"""


def task(**kw) -> Task:
    return Task(**{"run_id": "r1", "step_id": "fan/0", "prompt": "Write a", "agent": "writer", **kw})


# --- #2: cwd and isolation: worktree --------------------------------------------------------------


async def test_an_isolated_item_runs_in_the_same_folder_of_its_own_worktree(tmp_path):
    repo = repository(tmp_path / "repo", {"agentdir/writer.py": WRITER})
    (repo / "lockgate.toml").write_text(textwrap.dedent(f"""
        [agents.writer]
        type = "command"
        command = [{json.dumps(sys.executable)}, "writer.py"]
        cwd = "agentdir"
        env = {{ WHERE_LOG = {json.dumps(str(tmp_path / "where.log"))} }}
        """))
    result = await run(FANOUT, {"items": ["a", "b"]}, workspace=repo, store="memory",
                       config=load_config(repo / "lockgate.toml"))
    assert result.status == "complete", result.response
    log = [json.loads(line) for line in (tmp_path / "where.log").read_text().splitlines()]
    assert sorted(where["item"] for where in log) == ["a", "b"]
    for where in log:
        assert where["task_cwd"] != str(repo)  # its worktree
        assert where["ran_in"] == os.path.join(os.path.realpath(where["task_cwd"]), "agentdir")
    # the items' work came to the workspace through their patches, not written there directly
    assert (repo / "agentdir" / "out-a.txt").read_text() == "a"
    assert sorted(git(repo, "diff", "--cached", "--name-only").split()) == \
        ["agentdir/out-a.txt", "agentdir/out-b.txt"]


async def test_a_cwd_outside_the_repository_fails_an_isolated_item_without_running_it(tmp_path):
    repo = repository(tmp_path / "repo", {"README": "x\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_script(elsewhere, "where.py", WHERE)
    agent = CommandAgent("writer", [sys.executable, "where.py"], cwd=str(elsewhere))
    item = worktrees.ensure(repo, None)
    try:
        failed = await agent.execute(task(cwd=item))
    finally:
        worktrees.remove(repo, item)
    assert not failed.ok
    assert failed.failure == (
        f"agent 'writer': fan/0 runs isolated in its worktree {os.path.realpath(item)}, and the agent's cwd "
        f"{elsewhere} is not in the repository it was made from, so it cannot run there: set cwd to a folder of "
        "that repository (an item then runs in the same folder of its worktree), or remove cwd")
    # a step that is no isolated item runs in the agent's cwd, as it always did
    plain = await agent.execute(task(step_id="write", cwd=str(repo)))
    assert plain.ok, plain.failure
    assert plain.output == {"ran_in": str(elsewhere)}


async def test_a_cwd_the_worktree_lacks_fails_the_item_saying_to_commit_it(tmp_path):
    repo = repository(tmp_path / "repo", {"README": "x\n"})
    (repo / "scratch").mkdir()  # not committed: no worktree has it
    write_script(repo / "scratch", "where.py", WHERE)
    agent = CommandAgent("writer", [sys.executable, "where.py"], cwd=str(repo / "scratch"))
    item = worktrees.ensure(repo, None)
    try:
        failed = await agent.execute(task(cwd=item))
    finally:
        worktrees.remove(repo, item)
    assert failed.failure == (
        f"agent 'writer': fan/0 runs isolated in its worktree {os.path.realpath(item)}, which has no folder "
        "'scratch' (the agent's cwd): a worktree holds what is committed, so commit that folder (a file in it), "
        "or remove cwd")


# --- #4: the agent's own env.PATH -----------------------------------------------------------------


async def test_the_program_is_looked_for_on_the_agents_own_path(tmp_path, monkeypatch):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir()
    theirs.mkdir()
    write_script(mine, "myagent", "import json, sys\njson.load(sys.stdin)\nprint('{\"value\": 1}')\n")
    write_script(theirs, "otheragent", "print(1)\n")
    monkeypatch.setenv("PATH", f"{theirs}{os.pathsep}{os.environ['PATH']}")
    path = f"{mine}{os.pathsep}/usr/bin{os.pathsep}/bin"
    found = CommandAgent("worker", ["myagent"], env={"PATH": path})
    found.preflight()  # only the agent's PATH has it
    assert (await found.execute(task(cwd=str(tmp_path)))).output == {"value": 1}
    # ...and a program only on this process's PATH is not one the agent's command can run
    with pytest.raises(AgentUnavailable) as refused:
        CommandAgent("worker", ["otheragent"], env={"PATH": path}).preflight()
    assert str(refused.value) == f"agent 'worker': 'otheragent' is not on PATH (its env.PATH: {path})"


# --- #5: scripts beside lockgate.toml -------------------------------------------------------------

LINT_AGENT = "import json, sys\ntask = json.load(sys.stdin)\nprint(json.dumps({'value': 'ok:' + task['prompt']}))\n"

SPEC = """
version: 1
contracts:
  Out: {value: string}
flows:
  entry: main
  main:
    input: {text: string}
    output: {from: "${work.output}", contract: Out}
    steps:
      - id: work
        do: "Do ${input.text}"
        agent: worker
        out: Out
        attempts: 3
"""


def project(tmp_path: Path, script: str) -> Path:
    """proj/ with the spec, tools/lint_agent.py and a lockgate.toml naming ``script``."""
    proj = tmp_path / "proj"
    (proj / "tools").mkdir(parents=True)
    (proj / "tools" / "lint_agent.py").write_text(LINT_AGENT)
    (proj / "spec.stratum.yaml").write_text(SPEC)
    (proj / "lockgate.toml").write_text(
        f'[agents.worker]\ntype = "command"\ncommand = ["python3", "{script}"]\n')
    return proj


def lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    return subprocess.run([sys.executable, "-m", "lockgate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_script_beside_lockgate_toml_runs_from_any_folder(tmp_path):
    project(tmp_path, "tools/lint_agent.py")
    done = lockgate(tmp_path, "run", "proj/spec.stratum.yaml", "--input", "text=x", "--store", "memory",
                    "--no-prompt")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"value": "ok:Do x"}


def test_a_missing_script_is_refused_before_the_run_naming_where_it_was_looked_for(tmp_path):
    proj = project(tmp_path, "tools/lint_agnet.py")
    done = lockgate(tmp_path, "run", "proj/spec.stratum.yaml", "--input", "text=x", "--store", "memory",
                    "--no-prompt")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"error: agent 'worker': the script 'tools/lint_agnet.py' its command names is not there (looked in "
        f"{proj} (the configuration file's folder) and {tmp_path}, where the command runs)")
    assert "attempt" not in done.stderr and "Traceback" not in done.stderr


def test_a_missing_script_at_an_absolute_path_is_refused_before_the_run(tmp_path):
    gone = tmp_path / "gone.py"
    with pytest.raises(AgentUnavailable) as refused:
        CommandAgent("worker", [sys.executable, "-u", str(gone)]).preflight()
    assert str(refused.value) == f"agent 'worker': the script {str(gone)!r} its command names is not there"


def test_only_the_program_and_scripts_are_read_beside_the_configuration(tmp_path):
    """Other words (a data file, a folder) stay relative to where the command runs: an isolated
    item's data is its worktree's, never the main checkout's."""
    proj = project(tmp_path, "tools/lint_agent.py")
    (proj / "data.json").write_text("{}")
    (proj / "bin").mkdir()
    write_script(proj / "bin", "agent", "print(1)\n")
    agent = CommandAgent("worker", ["bin/agent", "tools/lint_agent.py", "data.json", "tools", "-x.py",
                                    "missing.py"], base_dir=str(proj))
    assert agent.argv() == (str(proj / "bin/agent"), str(proj / "tools/lint_agent.py"), "data.json",
                            "tools", "-x.py", "missing.py")
    assert agent.display == "bin/agent tools/lint_agent.py data.json tools -x.py missing.py"


# --- #8: stderr beside an empty stdout -------------------------------------------------------------


async def test_json_printed_on_stderr_is_shown_when_stdout_has_none(tmp_path):
    script = write_script(tmp_path, "agent_stderr.py",
                          "import sys\nsys.stdin.read()\nprint('{\"value\": \"x\"}', file=sys.stderr)\n")
    failed = await CommandAgent("worker", [sys.executable, str(script)]).execute(task(cwd=str(tmp_path)))
    assert failed.failure.endswith(
        "did not print JSON on stdout (Expecting value at line 1 column 1): (empty output) "
        "(its stderr: '{\"value\": \"x\"}')")


# --- #1: a call stopped while its group is being terminated --------------------------------------


async def test_a_second_cancellation_in_the_sigterm_grace_period_kills_the_group(tmp_path):
    """The first cancellation SIGTERMs the group and waits out the grace period; cancelled again
    there (a second Ctrl-C), the call SIGKILLs the group before it returns."""
    noted = tmp_path / "noted"
    os.mkfifo(noted)
    script = write_script(tmp_path, "stubborn.py", f"""
        import os, signal, time
        def note(signum, frame):
            with open({str(noted)!r}, "w") as fifo:
                fifo.write("SIGTERM\\n")
        signal.signal(signal.SIGTERM, note)
        with open({str(noted)!r}, "w") as fifo:
            fifo.write(f"{{os.getpid()}}\\n")
        while True:
            time.sleep(600)
        """)
    reader = os.open(noted, os.O_RDWR | os.O_NONBLOCK)  # never end of file
    try:
        call = asyncio.ensure_future(ProcessGroup().run([sys.executable, str(script)]))
        pid = int(await _line(reader, call))
        call.cancel()
        assert await _line(reader, call) == "SIGTERM"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert not pid_alive(pid), "the command outlived its call"
    finally:
        os.close(reader)
        if "pid" in locals() and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


async def _line(fd: int, call: asyncio.Future, timeout: float = 30) -> str:
    """The next line written on the FIFO open as ``fd`` (read-write, non-blocking)."""
    loop = asyncio.get_running_loop()
    data = b""
    async with asyncio.timeout(timeout):
        while not data.endswith(b"\n"):
            assert not call.done() or call.cancelled(), call
            readable = loop.create_future()
            loop.add_reader(fd, lambda: readable.done() or readable.set_result(None))
            try:
                await readable
            finally:
                loop.remove_reader(fd)
            try:
                data += os.read(fd, 1)
            except BlockingIOError:
                continue
    return data.decode().strip()
