"""``lockgate validate`` cuts a long literal or name it quotes in an expression's message, as it
cuts the excerpt under it (review s13b F8): a 100,000-digit number made one 100 KB line of LG601
in the text output and in ``--format json``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import lockgate_argv, lockgate_env

N = 100_000
SPEC = """version: 1
contracts:
  Out: {v: string}
flows:
  entry: f
  f:
    input: {}
    output: {from: "${s0.output}", contract: Out}
    steps:
      - id: s0
        do: "t"
        agent: a
        out: Out
        ensure:
          - expr: "EXPR"
"""


def validate(tmp_path: Path, expr: str, *extra: str) -> str:
    (tmp_path / "flow.stratum.yaml").write_text(SPEC.replace("EXPR", expr))
    proc = subprocess.run(lockgate_argv("validate", *extra, "flow.stratum.yaml"), cwd=tmp_path,
                          env=lockgate_env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("expr, message", ids=["integer", "decimal", "token", "function", "identifier"], argvalues=[
    ("len(result.v) > " + "9" * N,
     "error LG601: the number 99999999999999999999... (100,000 digits) is out of range (in 'ensure')"),
    ("1." + "5" * N + "e999 > 0",
     f"error LG601: the number 1.555555555555555555... ({N + 6:,} characters) is out of range (in 'ensure')"),
    ("result.v " + "9" * N,
     "error LG601: missing operator between 'v' and '9999999999999999999999999999999999999...'"),
    ("z" * N + "(1)",
     "error LG603: unknown function 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...': the builtins are"),
    ("y" * N + " > 1", "unknown identifier 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy...': expressions read only"),
])
def test_a_long_literal_is_cut_in_the_message(tmp_path, expr, message):
    output = validate(tmp_path, expr)
    assert message in output
    assert max(map(len, output.splitlines())) < 300


def test_the_json_report_is_small_too(tmp_path):
    report = json.loads(validate(tmp_path, "len(result.v) > " + "9" * N, "--format", "json"))
    assert len(json.dumps(report)) < 5000
    assert "(100,000 digits) is out of range" in json.dumps(report)
