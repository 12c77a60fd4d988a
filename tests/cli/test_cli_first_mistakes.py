"""A newcomer's first mistakes get the message about the mistake: inputs are checked before the
agents (a missing input was reported as a missing Claude binary), and the commands printed to go
on ask for the --agents module when an agent named like a built-in comes from one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import in_project
from click.testing import CliRunner

from lockgate.cli import main

SPEC = """version: 1
contracts:
  Note: {text: string}
flows:
  entry: main
  main:
    input:
      topic: string
    output: {from: "${draft.output}", contract: Note}
    max_rounds: 2
    steps:
      - {id: draft, agent: codex, do: "Write about ${input.topic}", out: Note}
      - id: review
        after: [draft]
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""
AGENTS = "def codex(task):\n    return {'text': task.prompt}\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", str(tmp_path / "no-binaries"))  # the built-in codex cannot run here
    return in_project(tmp_path, monkeypatch, SPEC, AGENTS)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_missing_input_is_reported_before_an_agent_that_cannot_run(project: Path) -> None:
    result = invoke("run", "flow.stratum.yaml", "--store", "runs.db", "--no-prompt")
    assert result.exit_code == 2
    assert 'missing required field "topic"' in result.stderr and "not on PATH" not in result.stderr
    assert "--input NAME=VALUE" in result.stderr


def test_a_module_agent_named_like_a_built_in_is_asked_for_when_going_on(project: Path) -> None:
    ran = invoke("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x", "--store", "runs.db",
                 "--no-prompt")
    assert ran.exit_code == 3, ran.stderr
    rid = json.loads(ran.stdout)["run_id"]
    revised = invoke("gate", "revise", rid, "review", "--note", "again", "--store", "runs.db")
    assert revised.exit_code == 0, revised.stderr
    (line,) = [x for x in revised.stdout.splitlines() if x.startswith("continue with agents:")]
    assert line.endswith("--agents agents.py --store runs.db")  # the module the run was driven with


def test_a_spec_error_is_reported_without_warnings_about_agents_the_run_has(project: Path) -> None:
    """LG905 ("agent 'writer' is not configured") is lockgate.toml's view; a run takes agents
    from --agents too, so its spec errors come without it (as in a notebook and over MCP)."""
    (project / "flow.stratum.yaml").write_text(SPEC.replace("agent: codex", "agent: writer")
                                               .replace("text: string", "text: strin"))
    (project / "agents.py").write_text("def writer(task):\n    return {'text': 'x'}\n")
    result = invoke("run", "flow.stratum.yaml", "--agents", "agents.py", "--input", "topic=x", "--store", "runs.db")
    assert result.exit_code == 2
    assert "strin" in result.stderr and "error" in result.stderr
    assert "LG905" not in result.stderr and "not configured" not in result.stderr
