"""``lockgate run`` through click's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main
from lockgate.engine.engine import Engine
from lockgate.engine.store import open_store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

GATED = textwrap.dedent("""
    version: 1
    contracts:
      Work:
        text: string
        score: number
    flows:
      entry: main
      main:
        input:
          ask: string
        output:
          from: "${work.output}"
          contract: Work
        max_rounds: 3
        steps:
          - id: work
            do: "Do ${input.ask}"
            agent: writer
            out: Work
            ensure:
              - expr: "result.score >= 0.5"
            attempts: 2
          - id: review
            after: [work]
            gate:
              on_approve: null
              on_revise: work
              on_kill: null
    """).lstrip()

AGENTS = textwrap.dedent("""
    import json, os

    def writer(task):
        score = float(os.environ.get("WRITER_SCORE", "0.9"))
        if task.violations:
            score = 0.9
        revised = "shorter" in (task.previous_failure or "")
        return {"text": task.prompt + (" (revised)" if revised else ""),
                "score": score}

    def _helper():
        return None
    """).lstrip()


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "flow.stratum.yaml").write_text(GATED)
    (tmp_path / "agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return tmp_path


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(main, ["run", *args], input=input, catch_exceptions=False)


def test_gate_approved_at_the_prompt(project):
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=a poem",
                    input="a\nlooks good\n")
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    assert output == {"text": "Do a poem", "score": 0.9}
    assert "Gate 'review'" in result.stderr
    assert "succeeded  work  attempt 1  [writer]" in result.stderr
    assert (project / ".lockgate" / "lockgate.db").exists()


def test_revise_then_approve_at_the_prompt(project):
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x",
                    input="r\nshorter please\nbogus\na\n\n")
    assert result.exit_code == 0, result.stderr
    assert "Please answer a, r or k (got 'bogus')" in result.stderr
    assert json.loads(result.stdout)["text"] == "Do x (revised)"


def test_kill_at_the_prompt_fails_the_run(project):
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x",
                    input="k\nwrong task\n")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["status"] == "killed"


def test_retry_violations_are_shown(project, monkeypatch):
    monkeypatch.setenv("WRITER_SCORE", "0.1")
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x",
                    "--no-prompt")
    assert "failed     work  attempt 1  [writer]" in result.stderr
    assert "retrying   work  attempt 2" in result.stderr
    failed = next(line for line in result.stderr.splitlines() if line.startswith("failed     work  attempt 1"))
    assert failed.endswith('- ensure "result.score >= 0.5" failed: predicate evaluated to false (result.score = 0.1)')


def test_no_prompt_leaves_the_gate_waiting_then_resume(project):
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x",
                    "--no-prompt")
    assert result.exit_code == 3
    summary = json.loads(result.stdout)
    assert summary["status"] == "await_gate" and summary["gates"][0]["step_id"] == "review"
    run_id = summary["run_id"]
    assert f"lockgate gate approve {run_id} review" in result.stderr
    engine = Engine(store=open_store(project / ".lockgate" / "lockgate.db"))
    engine.gate_resolve(run_id, "review", "approve", "ok", "carol",
                        summary["gates"][0]["token"])
    engine.close()
    resumed = invoke("--resume", run_id, "--agents", "agents.py", "--no-prompt")
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["text"] == "Do x"


def test_no_terminal_input_leaves_the_gate_waiting(project):
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x", input="")
    assert result.exit_code == 3
    assert "the gate stays waiting" in result.stderr


def test_inputs_file_and_json_values(project):
    (project / "inputs.yaml").write_text("ask: from file\n")
    result = invoke("flow.stratum.yaml", "--agents", "agents.py", "--inputs", "inputs.yaml",
                    "--store", "memory", input="a\n\n")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["text"] == "Do from file"


@pytest.mark.parametrize("args, message", [
    ((), "give a SPEC to run"),
    (("flow.stratum.yaml", "--agents", "agents.py", "--input", "oops"),
     "--input expects KEY=VALUE"),
    (("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x", "--input", "extra=1"),
     "inputs do not match flow 'main'"),
    (("flow.stratum.yaml", "--agents", "agents.py"), "input.ask"),
    (("flow.stratum.yaml", "--input", "ask=x"), "no agent named 'writer'"),
    (("flow.stratum.yaml", "--agents", "missing.py", "--input", "ask=x"), "no file missing.py"),
    (("flow.stratum.yaml", "--agents", "agents.py", "--input", "ask=x", "--flow", "nope"),
     "no flow 'nope'"),
])
def test_usage_errors_exit_2(project, args, message):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_invalid_spec_shows_diagnostics(project):
    (project / "bad.stratum.yaml").write_text(GATED.replace("out: Work", "out: Wrok"))
    result = invoke("bad.stratum.yaml", "--agents", "agents.py", "--input", "ask=x")
    assert result.exit_code == 2
    assert "Wrok" in result.stderr and "bad.stratum.yaml" in result.stderr


def test_readme_main_job_as_a_subprocess(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text('def f():\n    """Doc."""\n    return 1\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "lockgate", "run", str(EXAMPLES / "health.stratum.yaml"),
         "--agents", str(EXAMPLES / "health_agents.py"), "--input", "root=pkg"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["files"] == 1 and report["doc_coverage"] == 1.0
    assert "succeeded  report" in proc.stderr
    assert (tmp_path / ".lockgate" / "health-report.md").is_file()


def test_the_checked_health_example_runs_its_evaluate_and_set_steps(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text('def f():\n    """Doc."""\n    return 1\n\n\ndef g():\n    return 2\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCKGATE_STORE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "lockgate", "run", str(EXAMPLES / "checked-health.stratum.yaml"),
         "--agents", str(EXAMPLES / "health_agents.py"), "--input", "root=pkg"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"files": 1, "documented_enough": True,
                                       "verdict": "50% of functions documented"}
    assert "running    docs_gate  - command python3 -c 'import json, sys; r = json.load(sys.stdin); o..." in proc.stderr
    assert re.search(r"succeeded  docs_gate  - command ran \d+ ms", proc.stderr)


def test_gate_waiting_as_a_subprocess_exits_3(project):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "lockgate", "run", "flow.stratum.yaml", "--agents", "agents.py",
         "--input", "ask=x"], cwd=project, env=env, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["status"] == "await_gate"
