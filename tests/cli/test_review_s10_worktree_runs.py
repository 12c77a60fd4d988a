"""``lockgate run`` of an ``isolation: worktree`` fanout in a real git repository, stopped while
its ``pre_merge`` command runs (SIGKILL, a cancel from another terminal, Ctrl-C), then resumed:
no item's finished work is lost, nothing is merged twice or behind a cancel. Real processes:
``lockgate run``, its ``pre_merge`` command, ``lockgate cancel``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from cli_support import fifo_lines, lockgate_argv, lockgate_env

SPEC = """version: 1
contracts:
  Done: {ok: boolean}
flows:
  entry: main
  main:
    input: {items: "string[]"}
    output: {from: "${fan.output[0]}", contract: Done}
    steps:
      - id: fan
        fanout:
          over: "${input.items}"
          concurrency: 4
          isolation: worktree
          require: all
          merge: sequential
          pre_merge: ["sh PRE"]
          steps:
            - do: "ITEM ${item}"
              agent: ed
              out: Done
              attempts: 1
"""
# While HOLD exists, the pre_merge command says it started (its pid, on a FIFO the test reads)
# and waits until the test lets it go on (a line on another FIFO); it logs each run that passes.
PRE_MERGE = """if [ -e "{hold}" ]; then echo $$ > "{fifo}"; read line < "{go}"; fi
echo ran >> "{log}"
"""
# Each item writes ITEM.txt in its worktree and commits it: called again in the same worktree it
# fails (nothing to commit), as an agent that cannot redo its work would.
AGENTS = """import subprocess
from pathlib import Path

LOG = {log!r}


def ed(task):
    item = task.prompt.split()[-1]
    with open(LOG, "a") as out:
        out.write(f"{{item}} {{task.cwd}}\\n")
    cwd = Path(task.cwd)
    (cwd / f"{{item}}.txt").write_text(f"made by {{item}}\\n")
    subprocess.run(["git", "add", "-A"], cwd=cwd, check=True)
    subprocess.run(["git", "-c", "user.email=a@example.com", "-c", "user.name=a", "commit", "-qm", item],
                   cwd=cwd, check=True)
    return {{"ok": True}}
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


class Project:
    """A git repository (the workspace, where ``lockgate`` runs) and, beside it, the spec, the
    agents, the store, the ``pre_merge`` script and the logs."""

    def __init__(self, tmp_path: Path) -> None:
        self.repo = tmp_path / "repo"
        self.side = tmp_path / "side"
        self.side.mkdir()
        self.repo.mkdir()
        git(self.repo, "init", "-q")
        git(self.repo, "config", "user.email", "t@example.com")
        git(self.repo, "config", "user.name", "t")
        (self.repo / "base.txt").write_text("base\n")
        git(self.repo, "add", ".")
        git(self.repo, "commit", "-qm", "base")
        self.hold, self.fifo, self.go = self.side / "hold", self.side / "started.fifo", self.side / "go.fifo"
        os.mkfifo(self.fifo)
        os.mkfifo(self.go)
        pre = self.side / "pre.sh"
        pre.write_text(PRE_MERGE.format(hold=self.hold, fifo=self.fifo, go=self.go, log=self.side / "pre.log"))
        self.spec = SPEC.replace("sh PRE", f"sh {pre}")
        (self.side / "flow.stratum.yaml").write_text(self.spec)
        (self.side / "agents.py").write_text(AGENTS.format(log=str(self.side / "agents.log")))

    def argv(self, *args: str) -> list[str]:
        return lockgate_argv(*args, "--store", str(self.side / "runs.db"))

    def start(self, items: list[str]) -> subprocess.Popen:
        """``lockgate run`` of the flow over ``items``, holding in ``pre_merge``, in a process
        group of its own (as a terminal's foreground job: a Ctrl-C there reaches the group)."""
        self.hold.touch()
        return subprocess.Popen(self.argv("run", str(self.side / "flow.stratum.yaml"), "--agents",
                                          str(self.side / "agents.py"), "--input", f"items={json.dumps(items)}",
                                          "--no-prompt"),
                                cwd=self.repo, env=lockgate_env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

    def in_pre_merge(self, proc: subprocess.Popen) -> int:
        """Wait until the run's ``pre_merge`` command holds; its pid."""
        return int(fifo_lines(self.fifo, 1, [proc]).strip())

    def go_on(self) -> None:
        """Let the held ``pre_merge`` command go on."""
        self.hold.unlink()
        with open(self.go, "w") as fifo:
            fifo.write("go\n")

    def pre_merges(self) -> int:
        """How many times a ``pre_merge`` command passed."""
        log = self.side / "pre.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def lockgate(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), cwd=self.repo, env=lockgate_env(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, check=False)

    def run_id(self) -> str:
        (summary,) = json.loads(self.lockgate("runs", "--format", "json").stdout)
        return summary["run_id"]

    def resume(self, run_id: str) -> subprocess.CompletedProcess[str]:
        self.hold.unlink(missing_ok=True)
        return self.lockgate("run", "--resume", run_id, "--agents", str(self.side / "agents.py"), "--no-prompt")

    def called(self) -> list[str]:
        """The items whose agent was called, in order."""
        return [line.split()[0] for line in (self.side / "agents.log").read_text().splitlines()]

    def staged(self) -> list[str]:
        return sorted(git(self.repo, "diff", "--cached", "--name-only").split())

    def linked(self) -> list[str]:
        """The worktrees git knows of besides the repository's own."""
        return [line for line in git(self.repo, "worktree", "list", "--porcelain").splitlines()
                if line.startswith("worktree ")][1:]

    def events(self, run_id: str) -> list[dict]:
        return json.loads(self.lockgate("audit", run_id, "--format", "json").stdout)["events"]


def stop(pid: int) -> None:
    """End a process the test made hold (its ``lockgate`` parent is gone)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie nobody reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_a_runner_killed_in_pre_merge_loses_no_items_work(project: Project) -> None:
    proc = project.start(["a", "b"])
    pre = project.in_pre_merge(proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    stop(pre)
    run_id = project.run_id()

    resumed = project.resume(run_id)

    assert resumed.returncode == 0, resumed.stderr
    assert sorted(project.called()) == ["a", "b"]  # the last item's work was kept, not asked again
    assert project.staged() == ["a.txt", "b.txt"]
    assert project.linked() == []


GATED = """      - id: g
        gate: {on_approve: null, on_revise: null, on_kill: null}
"""


def test_a_decision_saved_while_pre_merge_runs_merges_once(project: Project) -> None:
    (project.side / "flow.stratum.yaml").write_text(project.spec.replace("    steps:\n", "    steps:\n" + GATED, 1))
    proc = project.start(["a", "b"])
    project.in_pre_merge(proc)
    run_id = project.run_id()
    approved = project.lockgate("gate", "approve", run_id, "g", "--note", "ok")
    assert approved.returncode == 0, approved.stderr

    project.go_on()
    _, err = proc.communicate(timeout=120)

    assert proc.returncode == 0, err
    assert project.pre_merges() == 1  # the transition was replayed on the decision, not its merge
    assert project.staged() == ["a.txt", "b.txt"]
    merges = [e for e in project.events(run_id) if e["type"] == "fanout_merge"]
    assert [m["detail"]["items"] for m in merges] == [[0, 1]]
    assert project.linked() == []


def test_a_cancel_from_another_terminal_during_pre_merge_merges_nothing(project: Project) -> None:
    proc = project.start(["a", "b"])
    project.in_pre_merge(proc)
    run_id = project.run_id()
    cancelled = project.lockgate("cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr

    project.go_on()
    proc.communicate(timeout=120)

    assert project.staged() == []
    assert [e for e in project.events(run_id) if e["type"] == "fanout_merge"] == []
    assert json.loads(project.lockgate("runs", "--format", "json").stdout)[0]["status"] == "cancelled"
    assert project.linked() == []


def test_ctrl_c_during_pre_merge_leaves_the_run_resumable(project: Project) -> None:
    proc = project.start(["a", "b"])
    pre = project.in_pre_merge(proc)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at the terminal: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert not running(pre)  # Lockgate stopped its pre_merge command
    run_id = project.run_id()

    resumed = project.resume(run_id)

    assert resumed.returncode == 0, resumed.stderr
    assert project.pre_merges() == 1 and sorted(project.called()) == ["a", "b"]
    assert project.staged() == ["a.txt", "b.txt"]
    assert project.linked() == []
