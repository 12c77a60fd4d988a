"""How ``lockgate run --input KEY=VALUE`` splits a pair (dsl.inputtext.inputs_from_pairs, shared
with the notebook's ``%flow run``): KEY trimmed, VALUE verbatim, the last pair for a KEY wins,
and a text with no ``=`` or an empty KEY is a one-line usage error."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lockgate.cli import main

SPEC = """version: 1
contracts: {Echo: {text: string}}
flows:
  entry: main
  main:
    input: {topic: string, count: integer}
    output: {from: "${echo.output}", contract: Echo}
    steps:
      - {id: echo, do: "[${input.topic}|${input.count}]", agent: echo, out: Echo}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCKGATE_STORE", raising=False)
    (tmp_path / "flow.stratum.yaml").write_text(SPEC)
    (tmp_path / "agents.py").write_text("def echo(task):\n    return {'text': task.prompt}\n")
    return tmp_path


def run(*pairs: str):
    args = ["run", "flow.stratum.yaml", "--agents", "agents.py", "--store", "memory"]
    for pair in pairs:
        args += ["--input", pair]
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.mark.parametrize(("pairs", "text"), [
    ((" topic =x", "count =3"), "[x|3]"),
    (("topic= two words ", "count= 3 "), "[ two words |3]"),
    (("topic=a=b", "count=1"), "[a=b|1]"),
    (("topic=first", "count=1", "topic=second"), "[second|1]"),
])
def test_the_key_is_trimmed_and_the_value_kept(project, pairs, text):
    result = run(*pairs)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"text": text}


@pytest.mark.parametrize(("pair", "message"), [
    ("topic", "error: --input expects KEY=VALUE, got 'topic'"),
    (" =x", "error: --input expects KEY=VALUE, got ' =x' (the KEY is empty)"),
])
def test_a_text_that_is_not_a_pair_is_a_usage_error(project, pair, message):
    result = run("count=1", pair)
    assert result.exit_code == 2
    assert result.stderr.strip() == message
