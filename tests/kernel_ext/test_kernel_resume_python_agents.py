"""After a kernel restart, a run driven with the notebook's agent functions (a real kernel):

- ``%flow resume RUN`` without ``--agents`` is refused, naming the variable (or the names) to
  pass: it used to go on with the built-in adapter of the same name (a ``codex`` function became
  the Codex CLI, here a stand-in on PATH that records its calls);
- ``%flow approve RUN STEP`` on the run no kernel drives says what the run does now and the line
  that continues it, as ``lockgate gate approve`` does, not the engine's raw response.
"""

from __future__ import annotations

import os
import stat

import pytest
from kernel_session import KernelSession

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
AGENTS = '''
def codex(task):
    return {"result": "by my function: " + task.prompt, "quality_score": 0.9}
my_agents = {"codex": codex}
'''
FAKE_CODEX = """#!/bin/sh
echo "CODEX CLI CALLED" >> "$PWD/codex-cli-calls.log"
cat > /dev/null
echo '{"type":"item.completed","item":{"type":"agent_message","text":"{\\\\"result\\\\": \\\\"cli\\\\", \\\\"quality_score\\\\": 1}"}}'
"""


@pytest.fixture()
def kernel(tmp_path, monkeypatch):
    """A kernel whose PATH has a stand-in ``codex`` CLI (the built-in adapter's binary)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(FAKE_CODEX)
    codex.chmod(codex.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-for-the-stand-in")
    cwd = tmp_path / "nb"
    cwd.mkdir()
    session = KernelSession(cwd)
    session.bind(pub=SPEC)
    session.run(AGENTS)
    yield session
    session.close()


def _waiting_then_restart(kernel, start: str) -> str:
    out = kernel.run(f'{start}\nawait run.wait_until(lambda r: "review" in r.waiting_gates())')
    assert out.error is None, out.traceback
    run_id = kernel.value("run.run_id")
    kernel.manager.restart_kernel(now=True)
    kernel.client.wait_for_ready(timeout=60)
    kernel.run("%load_ext lockgate")
    return run_id


def _error_text(out) -> str:
    assert out.error is not None, out.shown
    return f"{out.error['ename']}: {out.error['evalue']}"


def test_a_resume_without_the_agents_is_refused_naming_the_variable(kernel):
    run_id = _waiting_then_restart(kernel, 'run = pub.start({"text": "t"}, agents=my_agents)')
    refused = _error_text(kernel.run(f"r = %flow resume {run_id}"))
    assert f"run {run_id} was driven with agents given in Python (codex, from the variable my_agents)" in refused
    assert f"`%flow resume {run_id} --agents my_agents`" in refused
    assert not (kernel.cwd / "codex-cli-calls.log").exists()
    kernel.run(AGENTS)
    out = kernel.run(f"r = %flow resume {run_id} --agents my_agents\n"
                     "await r.wait_until(lambda r: 'review' in r.waiting_gates())\n"
                     "r.approve('review')\nprint((await r)['result'])")
    assert out.error is None, out.traceback
    assert out.stdout.strip() == "by my function: Publish by my function: Produce t"
    assert not (kernel.cwd / "codex-cli-calls.log").exists()


def test_a_literal_dict_of_agents_is_named_by_its_agent_names(kernel):
    run_id = _waiting_then_restart(kernel, 'run = pub.start({"text": "t"}, agents={"codex": codex})')
    refused = _error_text(kernel.run(f"%flow resume {run_id}"))
    assert f"`%flow resume {run_id} --agents VAR` in a notebook (VAR: a dict naming codex)" in refused
    assert not (kernel.cwd / "codex-cli-calls.log").exists()


def test_approving_a_run_no_kernel_drives_says_how_to_continue_it(kernel):
    run_id = _waiting_then_restart(kernel, "run = %flow run pub --input text=t --agents my_agents")
    out = kernel.run(f"%flow approve {run_id} review")
    assert out.error is None, out.traceback
    assert out.stdout.splitlines() == [f"run {run_id}: 1 step(s) to execute: publish",
                                       f"continue with: %flow resume {run_id} --agents my_agents"]
    assert out.data == []  # no raw response (its token, its schema) shown
    kernel.run(AGENTS)
    done = kernel.run(f"r = %flow resume {run_id} --agents my_agents\nprint((await r)['result'])")
    assert done.stdout.strip() == "by my function: Publish by my function: Produce t", done.shown
