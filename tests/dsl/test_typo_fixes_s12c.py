"""Fixes of references that name a step but miss its ``.output`` (review s12c #1, #2, #6).

- #2: ``${build.result}``, where Build has a field ``result``, was fixed to ``${build.output}``
  (a built-in slip ran before the contract was asked), which dropped the field and silently
  changed what the reference reads. It is ``${build.output.result}``.
- #1: ``${check.outptu}`` in a flow's ``output.from`` said "found a reference to carry" with no
  fix. It is named as a slip of ``.output`` and fixed, as in templates.
- #6: the preferred fix of ``${decide.outptu}`` (a gate) and ``${build.reslt}`` (a field typo)
  gave specs that were still invalid (LG405, LG404). A gate gets no fix; a field typo gets the
  contract's nearest field.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lockgate.dsl.loader import load

SPEC = """version: 1
contracts:
  Build:
    result: string
    version: string
flows:
  entry: main
  main:
    input:
      q: string
    output:
      from: "${ship.output}"
      contract: Build
    max_rounds: 2
    steps:
      - id: build
        do: "Build ${input.q}"
        out: Build
      - id: decide
        after: [build]
        gate:
          on_approve: ship
          on_revise: build
          on_kill: null
      - id: ship
        after: [decide]
        do: "Ship ${build.output.result}"
        out: Build
"""


def typed(reference: str, *, where: str = "${build.output.result}") -> str:
    return SPEC.replace(where, reference, 1)


def errors(text: str):
    return [d for d in load(text).diagnostics if d.is_error]


def only_error(text: str):
    found = errors(text)
    assert len(found) == 1, found
    return found[0]


def fixed(text: str, diagnostic) -> str:
    """``text`` with the diagnostic's one-line fix applied."""
    (edit,) = diagnostic.fix.edits
    lines = text.split("\n")
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = line[:edit.range.start.character] + edit.new_text + line[edit.range.end.character:]
    return "\n".join(lines)


def test_the_spec_is_valid():
    assert load(SPEC).ok, load(SPEC).diagnostics


@pytest.mark.parametrize("field", ["result", "version"])
def test_a_contract_field_after_a_missing_output_keeps_the_field(field):
    """#2: ``result`` is one of the built-in slips of ``.output``, but here it is Build's field."""
    text = typed(f"${{build.{field}}}")
    found = only_error(text)
    assert found.code == "LG407" and "carry" not in found.message
    repaired = fixed(text, found)
    assert f"${{build.output.{field}}}" in repaired and load(repaired).ok


def test_a_builtin_slip_that_is_no_field_still_becomes_output():
    text = typed("${build.outputs}")
    repaired = fixed(text, only_error(text))
    assert '"Ship ${build.output}"' in repaired


def test_a_field_typo_is_fixed_to_the_nearest_field():
    """#6: ``${build.reslt}`` was fixed to ``${build.output.reslt}`` (LG404)."""
    text = typed("${build.reslt}")
    found = only_error(text)
    assert "${build.output.result}" in found.message
    repaired = fixed(text, found)
    assert "${build.output.result}" in repaired and load(repaired).ok


def test_a_word_in_place_of_output_before_a_field_is_replaced():
    text = typed("${build.input.result}")
    repaired = fixed(text, only_error(text))
    assert "${build.output.result}" in repaired and load(repaired).ok


def test_an_unrelated_segment_gets_no_fix_but_the_fields():
    found = only_error(typed("${build.zzz}"))
    assert found.fix is None
    assert "result, version" in found.message


def test_a_gate_gets_no_fix():
    """#6: a gate has no output, so ``${decide.output}`` would be LG405 again."""
    found = only_error(typed("${decide.outptu}"))
    assert found.code == "LG407" and found.fix is None
    assert "gate" in found.message


@pytest.mark.parametrize(("typo", "meant"), [
    ("${ship.outptu}", "${ship.output}"),
    ("${ship.outputs}", "${ship.output}"),
    ("${ship.ouput.result}", "${ship.output.result}"),
    ("${ship.result}", "${ship.output.result}"),
])
def test_a_slip_in_output_from_is_named_and_fixed(typo, meant):
    """#1: it said "found a reference to carry" with no fix."""
    text = typed(typo, where="${ship.output}")
    found = only_error(text)
    assert found.code == "LG708" and "carry" not in found.message
    assert "ship" in found.message and meant in found.message
    repaired = fixed(text, found)
    assert f'from: "{meant}"' in repaired and load(repaired).ok


def test_output_from_of_a_gate_gets_no_fix():
    found = only_error(typed("${decide.outptu}", where="${ship.output}"))
    assert found.code == "LG708" and found.fix is None and "gate" in found.message


def test_output_from_of_an_unknown_carry_is_still_plain_lg708():
    found = only_error(typed("${nothing}", where="${ship.output}"))
    assert found.code == "LG708" and found.fix is None and "a reference to carry" in found.message


def test_validate_prints_the_output_from_fix(tmp_path: Path):
    path = tmp_path / "from.stratum.yaml"
    path.write_text(typed("${ship.outptu}", where="${ship.output}"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "lockgate", "validate", str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "fix: Change to '${ship.output}'" in result.stdout + result.stderr
