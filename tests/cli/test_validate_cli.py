"""``lockgate validate`` and ``lockgate schema`` as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from lockgate.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BAD = """version: 1
contracts:
  Out:
    text: string
flows:
  entry: main
  main:
    input: {}
    output:
      from: "${write.output}"
      contract: Out
    steps:
      - id: write
        do: "Write something"
        out: Otu
        after: [nothing]
"""


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, list(args), input=stdin)


def test_examples_are_valid():
    result = invoke("validate", "--no-lint", str(EXAMPLES))
    assert result.exit_code == 0, result.output
    count = len(list(EXAMPLES.glob("*.stratum.yaml")))
    assert f"{count} files checked: 0 errors, 0 warnings" in result.output


def test_text_report_has_excerpt_caret_and_fix(tmp_path):
    spec = tmp_path / "bad.stratum.yaml"
    spec.write_text(BAD)
    result = invoke("validate", str(spec))
    assert result.exit_code == 1
    assert f"{spec}:15:14: error LG302" in result.output
    assert "15 |         out: Otu\n   |              ^^^" in result.output
    assert "fix: Change to 'Out'" in result.output
    assert "LG502" in result.output
    assert "2 errors" in result.output


def test_json_format_is_data(tmp_path):
    spec = tmp_path / "bad.stratum.yaml"
    spec.write_text(BAD)
    result = invoke("validate", "--format", "json", str(spec))
    assert result.exit_code == 1
    payload = json.loads(result.output)
    assert payload[0]["ok"] is False
    codes = {d["code"]: d for d in payload[0]["diagnostics"]}
    assert codes["LG302"]["range"] == {"start": {"line": 14, "character": 13}, "end": {"line": 14, "character": 16}}
    assert codes["LG302"]["name"] == "CONTRACT_UNKNOWN_REF"
    assert codes["LG302"]["fix"]["edits"][0]["newText"] == "Out"


def test_github_annotations(tmp_path):
    spec = tmp_path / "bad.stratum.yaml"
    spec.write_text(BAD)
    result = invoke("validate", "--format", "github", str(spec))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert all(re.match(r"::(error|warning|notice) file=.*,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,title=LG\d+::", l) for l in lines)
    assert any("line=15,col=14" in l and "title=LG302" in l for l in lines)


def test_stdin(tmp_path):
    result = invoke("validate", "-", stdin=BAD)
    assert result.exit_code == 1 and "<stdin>:15:14" in result.output
    ok = invoke("validate", "-", stdin=(EXAMPLES / "sentiment.stratum.yaml").read_text())
    assert ok.exit_code == 0


def test_directory_finds_both_extensions(tmp_path):
    (tmp_path / "a.stratum.yaml").write_text((EXAMPLES / "sentiment.stratum.yaml").read_text())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.stratum.yml").write_text(BAD)
    (tmp_path / "ignored.yaml").write_text("not: [a spec")
    result = invoke("validate", str(tmp_path))
    assert result.exit_code == 1
    assert "2 files checked" in result.output


@pytest.mark.parametrize("args, message", [
    (("validate", "/no/such/file.stratum.yaml"), "no such file or directory"),
    (("validate", "{empty}"), "no spec files found"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    args = tuple(a.replace("{empty}", str(tmp_path)) for a in args)
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_unreadable_file_exits_2(tmp_path):
    (tmp_path / "good.stratum.yaml").write_text((EXAMPLES / "sentiment.stratum.yaml").read_text())
    (tmp_path / "odd.stratum.yaml").mkdir()  # matches the pattern but cannot be read as a file
    result = invoke("validate", str(tmp_path))
    assert result.exit_code == 2
    assert "odd.stratum.yaml: cannot read" in result.output
    assert "1 file checked: 0 errors" in result.output


def test_binary_input_is_a_diagnostic_not_a_crash(tmp_path):
    spec = tmp_path / "binary.stratum.yaml"
    spec.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    result = invoke("validate", str(spec))
    assert result.exit_code == 1 and "LG102" in result.output


def test_schema_command_prints_the_schema_that_validates_the_examples():
    result = invoke("schema")
    assert result.exit_code == 0
    schema = json.loads(result.output)
    validator = jsonschema.Draft202012Validator(schema)
    for path in EXAMPLES.glob("*.stratum.yaml"):
        text = path.read_text()
        first = text.splitlines()[0]
        assert first == "# yaml-language-server: $schema=../lockgate/dsl/schema/spec.v1.schema.json"
        assert (path.parent / first.split("=", 1)[1]).resolve() == Path(invoke("schema", "--path").output.strip())
        assert not list(validator.iter_errors(yaml.safe_load(text))), path.name


def test_python_dash_m_and_help():
    out = subprocess.run([sys.executable, "-m", "lockgate", "validate", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "Exit status: 0 valid, 1 errors found" in out.stdout


def test_agents_named_in_the_nearest_lockgate_toml_are_known(tmp_path):
    spec = (EXAMPLES / "sentiment.stratum.yaml").read_text().replace("agent: claude", "agent: tagger")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "s.stratum.yaml").write_text(spec)
    unknown = invoke("validate", str(tmp_path))
    assert "LG905" in unknown.output and "'tagger'" in unknown.output
    (tmp_path / "lockgate.toml").write_text('[agents.tagger]\ntype = "command"\ncommand = ["tagger"]\n')
    _configured_cache_clear()
    known = invoke("validate", str(tmp_path))
    assert known.exit_code == 0 and "LG905" not in known.output


def _configured_cache_clear():
    from lockgate.cli import validate as module

    module._configured_agents_in.cache_clear()
