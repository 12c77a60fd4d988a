"""A resume from the terminal never quietly swaps the agents a run was driven with (real
``lockgate`` processes; a real kernel where a notebook drives the run). The flow's agent is
``codex``, whose built-in adapter runs here: a stand-in ``codex`` CLI on PATH that logs its calls,
so a resume that took it instead of the run's own function is seen.

- a script's ``run_sync(..., agents=...)``: ``gate approve`` asks for the agents, saying which
  (it printed a bare ``lockgate run --resume RUN``), and that resume is refused (it called the
  Codex CLI);
- ``lockgate run --agents agents.py``: ``gate approve`` names the module and a resume without it
  is refused (both happened only when no built-in of the same name could run), as is
  ``%flow resume RUN`` in a notebook; for the agents the drive took from the module, as its
  claim records them: a module's ``codex`` bound by a tuple assignment or ``register()`` too
  (a guess from its source missed those: the resume quietly called the Codex CLI), but not a
  class instance, a ``functools.partial`` or a function under an ``if`` that did not run,
  which ``lockgate run`` never took from it (the guess counted them: the run could never be
  resumed), nor a module that gave none of the flow's agents and is gone since; an older
  Lockgate's record of the module alone refuses nothing and is still named;
- a run a kernel drives right now is refused as driven first (it asked for the agents first),
  offering the ``%flow resume`` line with its variable (it offered a ``lockgate run --resume``
  that was then refused); once the kernel is gone, ``gate approve`` names the notebook
  variable and the ``%flow resume`` line (it said the store records no --agents module); a
  drive on another host offers a take-over with a module defining them;
- ``show``, ``why`` and ``resume`` print a Python agent's traceback as ``lockgate run`` does:
  the message on its line, the frames below (they were flattened into one line).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import ROOT, lockgate_argv, lockgate_env
from kernel_ext.kernel_session import KernelSession

from lockgate.engine import Engine
from lockgate.engine.drivers import Driver
from lockgate.engine.store import open_store

SPEC = """version: 1
contracts:
  W: {result: string, quality_score: number}
flows:
  entry: pub
  pub:
    input: {text: string}
    output: {from: "${publish.output}", contract: W}
    max_rounds: 3
    steps:
      - {id: work, do: "Produce ${input.text}", agent: codex, out: W}
      - id: review
        after: [work]
        gate: {on_approve: publish, on_revise: work, on_kill: null}
      - {id: publish, do: "Publish ${work.output.result}", agent: codex, out: W}
"""
AGENTS = """
def codex(task):
    return {"result": "by my function: " + task.prompt, "quality_score": 0.9}
"""
FAKE_CODEX = """#!/bin/sh
echo "CODEX CLI CALLED" >> "$PWD/codex-cli-calls.log"
cat > /dev/null
echo '{"type":"item.completed","item":{"type":"agent_message","text":"{\\\\"result\\\\": \\\\"cli\\\\", \\\\"quality_score\\\\": 1}"}}'
"""
SCRIPT = """
import lockgate
from agents import codex

result = lockgate.run_sync(open("pub.yaml").read(), {"text": "t"}, agents={"codex": codex}, gates=None)
print(result.run_id)
"""
DONE = {"result": "by my function: Publish by my function: Produce t", "quality_score": 0.9}


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the spec, agents.py, and the stand-in Codex CLI on PATH (of the commands
    and of a kernel started here), with no store taken from the environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(FAKE_CODEX)
    codex.chmod(codex.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-the-stand-in")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # a kernel imports this checkout too
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "pub.yaml").write_text(SPEC)
    (cwd / "agents.py").write_text(AGENTS)
    return cwd


def lockgate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lockgate_argv(*args), cwd=cwd, env=lockgate_env(), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)


def codex_cli_called(cwd: Path) -> bool:
    return (cwd / "codex-cli-calls.log").exists()


def test_a_library_run_is_not_resumed_without_its_agents(project: Path) -> None:
    (project / "start.py").write_text(SCRIPT)
    started = subprocess.run([sys.executable, "start.py"], cwd=project, env=lockgate_env(), capture_output=True,
                             text=True, timeout=120, check=True)
    rid = started.stdout.strip()

    approved = lockgate(project, "gate", "approve", rid, "review")
    assert approved.stdout.splitlines()[1:] == [
        f"continue with agents: lockgate run --resume {rid} --agents <your agents module>",
        (f"  (the run was driven with agents given in Python (codex): resume it with agents= in Python, in a "
         f"notebook with `%flow resume {rid} --agents VAR` (VAR: a dict naming codex), or here with a module "
         "defining codex())")]
    refused = lockgate(project, "run", "--resume", rid)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(f"error: run {rid} was driven with agents given in Python (codex), and "
                                     "this resume was given none for codex")
    assert not codex_cli_called(project)

    done = lockgate(project, "run", "--resume", rid, "--agents", "agents.py")
    assert (done.returncode, json.loads(done.stdout)) == (0, DONE), done.stderr
    assert not codex_cli_called(project)


def _module_run_approved(project: Path) -> str:
    started = lockgate(project, "run", "pub.yaml", "--input", "text=t", "--agents", "agents.py", "--no-prompt")
    assert started.returncode == 3, started.stderr
    rid = json.loads(started.stdout)["run_id"]
    approved = lockgate(project, "gate", "approve", rid, "review")
    assert approved.stdout.splitlines()[1:] == [
        f"continue with agents: lockgate run --resume {rid} --agents agents.py"]
    return rid


def test_a_run_driven_with_a_modules_agents_is_resumed_only_with_them(project: Path) -> None:
    rid = _module_run_approved(project)
    assert f"    lockgate run --resume {rid} --agents agents.py" in lockgate(project, "why", rid).stdout.splitlines()

    refused = lockgate(project, "run", "--resume", rid)
    assert (refused.returncode, refused.stderr.strip()) == (2, (
        f"error: run {rid} was driven with the agents of --agents agents.py: give it again: "
        f"lockgate run --resume {rid} --agents agents.py"))
    (project / "helpers.py").write_text("def helper(task):\n    return {}\n")
    another = lockgate(project, "run", "--resume", rid, "--agents", "helpers.py")
    assert another.returncode == 2, another.stderr
    assert another.stderr.startswith(f"error: run {rid} was driven with the agents of --agents "
                                     f"{(project / 'agents.py').resolve()} (codex), and this resume was given "
                                     "none for codex")
    assert not codex_cli_called(project)

    done = lockgate(project, "run", "--resume", rid, "--agents", "agents.py")
    assert (done.returncode, json.loads(done.stdout)) == (0, DONE), done.stderr
    assert not codex_cli_called(project)


def test_a_notebook_resume_of_a_run_driven_with_a_module_needs_its_agents(project: Path) -> None:
    rid = _module_run_approved(project)
    kernel = KernelSession(project)
    try:
        out = kernel.run(f"%flow resume {rid}")
        assert out.error is not None, out.shown
        assert out.error["evalue"].startswith(f"%flow resume: run {rid} was driven with the agents of --agents "
                                              f"{(project / 'agents.py').resolve()} (codex)")
        assert not codex_cli_called(project)
        kernel.run(AGENTS + 'my_agents = {"codex": codex}')
        done = kernel.run(f"r = %flow resume {rid} --agents my_agents\nprint((await r)['result'])")
        assert done.stdout.strip() == DONE["result"], done.shown
    finally:
        kernel.close()
    assert not codex_cli_called(project)


def test_a_run_a_kernel_drives_is_refused_as_driven_then_named_by_its_variable(project: Path) -> None:
    kernel = KernelSession(project)
    try:
        kernel.bind(pub=SPEC)
        kernel.run(AGENTS + 'my_agents = {"codex": codex}')
        out = kernel.run('run = pub.start({"text": "t"}, agents=my_agents)\n'
                         'await run.wait_until(lambda r: "review" in r.waiting_gates())')
        assert out.error is None, out.traceback
        rid = kernel.value("run.run_id")
        kernel_pid = kernel.value("__import__('os').getpid()")

        refused = lockgate(project, "run", "--resume", rid)
        assert refused.returncode == 4, refused.stderr
        assert refused.stderr.startswith(f"error: run {rid} is being driven by process {kernel_pid} on this host")
        assert refused.stderr.splitlines()[-1] == (
            f"  or stop process {kernel_pid} (Ctrl-C in its terminal; a notebook kernel: restart it) and resume it "
            f"with its agents, given in Python (codex): `%flow resume {rid} --agents my_agents` in a notebook")

        kernel.manager.restart_kernel(now=True)
        kernel.client.wait_for_ready(timeout=60)
    finally:
        kernel.close()
    approved = lockgate(project, "gate", "approve", rid, "review")
    assert approved.stdout.splitlines()[1:] == [
        f"continue with agents: lockgate run --resume {rid} --agents <your agents module>",
        (f"  (the run was driven with agents given in a notebook (codex, from the variable my_agents): resume "
         f"it there with `%flow resume {rid} --agents my_agents`, or here with a module defining codex())")]
    assert not codex_cli_called(project)


CLI_DONE = {"result": "cli", "quality_score": 1}
NOT_TAKEN = {
    "class instance": ("class Codex:\n    def __call__(self, task):\n        return {'result': 'instance'}\n"
                       "codex = Codex()\n"),
    "functools.partial": ("import functools\ndef _ask(task, role):\n    return {'result': role}\n"
                          "codex = functools.partial(_ask, role='codex')\n"),
    "defined under an if": ("import os\nif os.environ.get('FAKE_AGENTS'):\n    def codex(task):\n"
                            "        return {'result': 'fake'}\n"),
}
HELPER = "\ndef helper(task):\n    return {'result': 'unused'}\n"


@pytest.mark.parametrize("source", NOT_TAKEN.values(), ids=NOT_TAKEN.keys())
def test_what_lockgate_run_did_not_take_from_the_module_is_not_asked_for(project: Path, source: str) -> None:
    (project / "agents.py").write_text(source + HELPER)
    started = lockgate(project, "run", "pub.yaml", "--input", "text=t", "--agents", "agents.py", "--no-prompt")
    assert started.returncode == 3, started.stderr
    rid = json.loads(started.stdout)["run_id"]
    assert codex_cli_called(project)  # the Codex CLI did the step: the module gave no codex
    revised = lockgate(project, "gate", "revise", rid, "review", "--note", "again")
    assert revised.stdout.splitlines()[-1] == f"continue with agents: lockgate run --resume {rid}"

    # what a refusal asked for (the module, again) was refused too: the run could never go on
    again = lockgate(project, "run", "--resume", rid, "--agents", "agents.py", "--no-prompt")
    assert again.returncode == 3, again.stderr
    lockgate(project, "gate", "approve", rid, "review")
    done = lockgate(project, "run", "--resume", rid)
    assert (done.returncode, json.loads(done.stdout)) == (0, CLI_DONE), done.stderr


MADE = """
def _make(label):
    def agent(task):
        return {"result": "by my function: " + task.prompt, "quality_score": 0.9}
    return agent
"""
TAKEN = {  # (--agents, its file, its source)
    "tuple assignment": ("pkg.agents", "pkg/agents.py", MADE + "\ncodex, other = _make('codex'), _make('other')\n"),
    "register()": ("agents.py", "agents.py", "from lockgate.engine.agents.registry import register\n" + MADE +
                   "\nregister('codex', _make('codex'))\n" + HELPER),
}


@pytest.mark.parametrize(("module", "file", "source"), TAKEN.values(), ids=TAKEN.keys())
def test_what_the_module_gave_however_it_bound_it_is_asked_for(project: Path, module: str, file: str,
                                                                source: str) -> None:
    path = project / file
    if path.parent != project:  # a package
        path.parent.mkdir()
        (path.parent / "__init__.py").touch()
    path.write_text(source)
    started = lockgate(project, "run", "pub.yaml", "--input", "text=t", "--agents", module, "--no-prompt")
    assert started.returncode == 3, started.stderr
    rid = json.loads(started.stdout)["run_id"]
    approved = lockgate(project, "gate", "approve", rid, "review")
    assert approved.stdout.splitlines()[1:] == [f"continue with agents: lockgate run --resume {rid} --agents {module}"]

    refused = lockgate(project, "run", "--resume", rid)
    assert (refused.returncode, refused.stderr.strip()) == (2, (
        f"error: run {rid} was driven with the agents of --agents {module}: give it again: "
        f"lockgate run --resume {rid} --agents {module}"))
    done = lockgate(project, "run", "--resume", rid, "--agents", module)
    assert (done.returncode, json.loads(done.stdout)) == (0, DONE), done.stderr
    assert not codex_cli_called(project)


def test_a_module_that_gave_none_of_the_flows_agents_is_not_needed_once_gone(project: Path) -> None:
    (project / "scratch.py").write_text(HELPER)
    started = lockgate(project, "run", "pub.yaml", "--input", "text=t", "--agents", "scratch.py", "--no-prompt")
    rid = json.loads(started.stdout)["run_id"]
    lockgate(project, "gate", "approve", rid, "review")
    (project / "scratch.py").unlink()
    why = lockgate(project, "why", rid).stdout
    assert f"    lockgate run --resume {rid}" in why.splitlines() and "<your agents module>" not in why
    done = lockgate(project, "run", "--resume", rid)
    assert (done.returncode, json.loads(done.stdout)) == (0, CLI_DONE), done.stderr


def test_an_older_record_of_the_module_alone_is_named_but_refuses_nothing(project: Path) -> None:
    started = lockgate(project, "run", "pub.yaml", "--input", "text=t", "--agents", "agents.py", "--no-prompt")
    rid = json.loads(started.stdout)["run_id"]
    engine = Engine(store=open_store(str(project / ".lockgate" / "lockgate.db")))
    older = Driver.here("", str((project / "agents.py").resolve()))  # a Lockgate that recorded no names
    engine.claim(rid, older)
    engine.release(rid, older)
    engine.close()

    approved = lockgate(project, "gate", "approve", rid, "review")
    assert approved.stdout.splitlines()[1:] == [f"continue with agents: lockgate run --resume {rid} --agents agents.py"]
    # which agents the module gave is not known: not refused, as before such resumes were
    done = lockgate(project, "run", "--resume", rid)
    assert (done.returncode, json.loads(done.stdout)) == (0, CLI_DONE), done.stderr


def test_a_drive_of_python_agents_on_another_host_is_offered_a_take_over_with_a_module(project: Path) -> None:
    (project / "start.py").write_text(SCRIPT)
    started = subprocess.run([sys.executable, "start.py"], cwd=project, env=lockgate_env(), capture_output=True,
                             text=True, timeout=120, check=True)
    rid = started.stdout.strip()
    engine = Engine(store=open_store(str(project / ".lockgate" / "lockgate.db")))
    elsewhere = Driver("a-drive-elsewhere", "another-host", 4242, None, time.time(), "",
                       agents=engine.last_agents(rid))
    engine.claim(rid, elsewhere)
    engine.close()

    refused = lockgate(project, "run", "--resume", rid)
    assert refused.returncode == 4, refused.stderr
    assert refused.stderr.splitlines()[-2:] == [
        ("  if that process is gone for good, drive the run here anyway, with a module defining codex() (its agents "
         "were given in Python):"),
        f"    lockgate run --resume {rid} --take-over --agents <your agents module>"]
    assert not codex_cli_called(project)


FAILING = """
def parse(reply):
    return {"result": reply["score"]}


def codex(task):
    return parse({})
"""


def test_show_why_and_resume_print_a_python_agents_traceback_below_its_message(project: Path) -> None:
    (project / "agents.py").write_text(FAILING)
    failed = lockgate(project, "run", "pub.yaml", "--input", "text=t", "--agents", "agents.py")
    assert failed.returncode == 1, failed.stderr
    rid = json.loads(failed.stdout)["run_id"]
    path = (project / "agents.py").resolve()
    frames = ["Traceback (the agent's frames, most recent call last):",
              f'  File "{path}", line 7, in codex', "    return parse({})",
              f'  File "{path}", line 3, in parse', '    return {"result": reply["score"]}']
    message = "agent reported failure: KeyError: 'score'"

    shown = lockgate(project, "show", rid).stdout.splitlines()
    assert shown[2:8] == [f"failure: {message}", *frames]
    (work,) = [line for line in shown if line.startswith("work ")]
    assert work.endswith(f"ms  {message}")  # the table's last failure: the message only
    why = lockgate(project, "why", rid).stdout.splitlines()
    assert why[:6] == [f"run {rid} failed (retries_exhausted): {message}", *frames]
    resumed = lockgate(project, "resume", rid).stdout.splitlines()
    assert resumed == [f"run {rid}: failed (retries_exhausted): {message}", *frames]


def test_a_module_that_no_longer_defines_the_runs_agent_says_so(project: Path) -> None:
    rid = _module_run_approved(project)
    (project / "agents.py").write_text(AGENTS.replace("def codex(", "def my_codex("))  # renamed since
    refused = lockgate(project, "run", "--resume", rid, "--agents", "agents.py")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip() == (
        f"error: run {rid} was driven with codex from --agents {project / 'agents.py'}, which no longer defines "
        "it: another adapter (lockgate.toml, a registered agent or a built-in) would answer instead. Define codex "
        "in it again, or resume with a module (or agents= in Python) that does")
    assert not codex_cli_called(project)
