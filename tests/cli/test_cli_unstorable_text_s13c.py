"""Text no store keeps (U+0000, a lone surrogate) is blamed on the value that holds it, not on
the store's own records (review s13b F5): an agent's result fails its attempt with a violation
at the path inside the result, which the retry is told; an ``--input`` that is not UTF-8 is
refused before the run is planned, naming the option and the key, and so is an ``--inputs``
file whose JSON escapes write such text. The real ``lockgate`` command in a subprocess, with a
real command agent and the SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import lockgate_argv, lockgate_env

SPEC = """version: 1
contracts:
  Item: {t: string}
  Out: {items: "Item[]"}
flows:
  entry: main
  main:
    input: {topic: string}
    output: {from: "${s0.output}", contract: Out}
    steps:
      - id: s0
        do: "Write about ${input.topic}"
        agent: writer
        out: Out
        attempts: 2
"""

# answers FIRST on its first attempt, a good result on the next; logs each task it was given
AGENT = """
import json, os, sys
task = json.load(sys.stdin)
with open("tasks.jsonl", "a") as log:
    log.write(json.dumps(task) + "\\n")
if task["attempt"] == 1:
    sys.stdout.write(os.environ["FIRST"])
else:
    print(json.dumps({"items": [{"t": "fine"}]}))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "lockgate.toml").write_text(
        f'[agents.writer]\ntype = "command"\ncommand = [{json.dumps(sys.executable)}, "agent.py"]\n')
    return tmp_path


def lockgate(project: Path, *args: str | bytes, first: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(lockgate_argv("run", "flow.stratum.yaml", "--no-prompt", *args), cwd=project,
                          env={**lockgate_env(), "FIRST": first}, capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize("escape, problem", [
    ("\\u0000", "contains U+0000, which no store keeps"),
    ("\\ud800", "holds the lone surrogate U+D800, which is not Unicode text; no store keeps it"),
])
def test_a_result_holding_unstorable_text_is_a_violation_at_its_path(project, escape, problem):
    first = '{"items": [{"t": "ok"}, {"t": "a%sb"}]}' % escape
    proc = lockgate(project, "--input", "topic=tides", first=first)
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    violation = {"path": "result.items[1].t", "message": problem}
    assert f"failed     s0  attempt 1  [writer]  - result.items[1].t: {problem}\n" in stderr
    assert "header" not in stderr and "steps[" not in stderr
    retry = json.loads((project / "tasks.jsonl").read_text().splitlines()[1])
    assert retry["violations"] == [violation]
    assert retry["previous_failure"] == f"the result cannot be stored: result.items[1].t: {problem}"


def test_an_input_value_that_is_not_utf8_is_refused_naming_the_key(project):
    proc = lockgate(project, "--input", b"topic=tid\xffes")
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "error: --input topic: the value is not UTF-8 text"
    assert not (project / ".lockgate").exists()  # no run was planned, no store opened


def test_an_input_key_that_is_not_utf8_is_refused_showing_its_bytes(project):
    proc = lockgate(project, "--input", b"top\xffic=tides")
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "error: --input 'top\\xffic': the key is not UTF-8 text"


def test_an_input_whose_json_writes_unstorable_text_is_refused_saying_where(project):
    spec = (project / "flow.stratum.yaml").read_text().replace("{topic: string}", '{topic: string, tags: "string[]"}')
    (project / "flow.stratum.yaml").write_text(spec)
    proc = lockgate(project, "--input", "topic=x", "--input", 'tags=["a", "b\\u0000"]')
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "error: --input tags: input.tags[1]: contains U+0000, which no store keeps"


@pytest.mark.parametrize("content, message", [
    ('{"topic": "a\\u0000"}', "input.topic: contains U+0000, which no store keeps"),
    ('{"topic": "x", "\\udc80k": 1}',
     'input["\\udc80k"]: its key holds the lone surrogate U+DC80, which is not Unicode text; no store keeps it'),
])
def test_an_inputs_file_holding_unstorable_text_is_refused_saying_where(project, content, message):
    (project / "in.json").write_text(content)
    proc = lockgate(project, "--inputs", "in.json")
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == f"error: --inputs: in.json: {message}"
    assert not (project / ".lockgate").exists()


def test_text_a_store_keeps_is_taken_as_before(project):
    proc = lockgate(project, "--input", "topic=tide\u0301s \U0001f30a", first='{"items": [{"t": "\\ud83c\\udf0a"}]}')
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == {"items": [{"t": "\U0001f30a"}]}
    assert len((project / "tasks.jsonl").read_text().splitlines()) == 1
    assert os.path.exists(project / ".lockgate")
