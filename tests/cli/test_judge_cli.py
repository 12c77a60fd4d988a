"""``lockgate run --judge AGENT`` and ``judge = "..."`` in lockgate.toml."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from lockgate.cli import main

ROOT = Path(__file__).resolve().parents[2]

SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Draft:
        title: string
    flows:
      entry: main
      main:
        input:
          topic: string
        output:
          from: "${draft.output}"
          contract: Draft
        steps:
          - id: draft
            do: "Draft a title about ${input.topic}"
            agent: writer
            out: Draft
            ensure:
              - judged:
                  statement: "the title is about the topic"
            attempts: 2
    """).lstrip()

AGENTS = textwrap.dedent("""
    def writer(task):
        return {"title": "sun" if task.attempt == 1 else "rain"}

    def critic(task):
        holds = task.inputs["input"]["topic"] in task.inputs["result"]["title"]
        return {"holds": holds, "reason": "on topic" if holds else "the title never mentions rain"}

    def lenient(task):
        return {"holds": True, "reason": "anything goes"}
    """).lstrip()


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "judged.stratum.yaml").write_text(SPEC)
    (tmp_path / "judge_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(main, ["run", "judged.stratum.yaml", "--agents", "judge_agents.py",
                                     "--input", "topic=rain", "--store", "memory", *args],
                              catch_exceptions=False)


def test_judge_from_the_command_line(project):
    result = invoke("--judge", "critic")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"title": "rain"}
    assert "the title never mentions rain" in " ".join(result.stderr.split())  # lines wrap
    assert "retrying   draft  attempt 2" in result.stderr


def test_judge_from_lockgate_toml(project):
    (project / "lockgate.toml").write_text('judge = "critic"\n')
    result = invoke()
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"title": "rain"}


def test_command_line_judge_overrides_lockgate_toml(project):
    (project / "lockgate.toml").write_text('judge = "lenient"\n')
    assert json.loads(invoke().stdout) == {"title": "sun"}
    result = invoke("--judge", "critic")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"title": "rain"}


def test_unknown_judge_is_a_usage_error_listing_the_agents(project):
    result = invoke("--judge", "nobody")
    assert result.exit_code == 2
    assert ("error: no agent named 'nobody' to be the judge; the agents are: claude, codex, "
            "critic, lenient, writer") in result.stderr


def test_unknown_judge_in_lockgate_toml_names_the_file(project):
    (project / "lockgate.toml").write_text('judge = "nobody"\n')
    result = invoke()
    assert result.exit_code == 2
    assert "lockgate.toml: judge: no agent named 'nobody' to be the judge" in result.stderr


def test_without_a_judge_the_ensure_fails_closed(project):
    result = invoke()
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["status"] == "error"
    assert "no judge is configured" in json.dumps(summary["violations"])


def test_judge_as_a_subprocess(project):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "lockgate", "run", "judged.stratum.yaml", "--agents",
         "judge_agents.py", "--input", "topic=rain", "--judge", "critic"],
        cwd=project, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"title": "rain"}
