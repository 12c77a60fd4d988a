"""``lockgate run --input KEY=VALUE`` reads VALUE by the type the flow declares for KEY (as the
notebook's ``%flow run`` does): a string input takes numeric-looking text verbatim."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from lockgate.cli import main

SPEC = textwrap.dedent("""
    version: 1
    contracts:
      Echo:
        text: string
    flows:
      entry: main
      main:
        input:
          topic: string
          level: low|high|7
          count: integer
          tags: string[]
          note: string?
        output:
          from: "${echo.output}"
          contract: Echo
        steps:
          - id: echo
            do: "${input.topic}/${input.level}/${input.count}/${input.tags[0]}/${input.note}"
            agent: echo
            out: Echo
    """).lstrip()

AGENTS = "def echo(task):\n    return {'text': task.prompt}\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text(AGENTS)
    return tmp_path


def run(*inputs: str, extra: tuple[str, ...] = ()):
    args = ["run", "flow.stratum.yaml", "--agents", "agents.py", "--store", "memory", *extra]
    for pair in inputs:
        args += ["--input", pair]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_each_value_is_read_by_its_declared_type(project):
    result = run("topic=42", "level=7", "count=3", 'tags=["1.10"]', "note=007")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"text": "42/7/3/1.10/007"}


def test_json_looking_text_stays_text_for_a_string_input(project):
    result = run('topic={"a": 1}', "level=low", "count=1", 'tags=["x"]', "note=null")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"text": '{"a": 1}/low/1/x/null'}


def test_a_value_that_is_not_of_its_type_is_still_refused(project):
    result = run("topic=x", "level=low", "count=many", "tags=[]")
    assert result.exit_code == 2
    assert "input.count: expected integer" in result.stderr


def test_an_inputs_file_keeps_the_types_it_wrote(project):
    (project / "in.yaml").write_text("topic: 42\nlevel: low\ncount: 1\ntags: [x]\nnote: n\n")
    result = run(extra=("--inputs", "in.yaml"))
    assert result.exit_code == 2
    assert "input.topic: expected string, found integer 42" in result.stderr
    overridden = run("topic=42", extra=("--inputs", "in.yaml"))
    assert overridden.exit_code == 0, overridden.stderr


def test_an_unknown_flow_is_still_the_engines_message(project):
    result = run("topic=x", extra=("--flow", "nope"))
    assert result.exit_code == 2
    assert "nope" in result.stderr and "Traceback" not in result.stderr
