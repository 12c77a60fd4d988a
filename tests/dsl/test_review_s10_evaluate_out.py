"""An evaluate step's ``out`` contract against the evaluator's fixed result shape (review s10,
F6 #4; semantics §1.7): ``{status: closed|open|failed, children: any[], reason: string,
score?: number, route?: claude|codex}`` is checked first, then ``out``, on every result. An
``out`` that lacks a field every result has, requires one no result has, or types one so that
no result's value fits refuses every result: LG305 at the step's ``out``."""

from __future__ import annotations

import pytest

from lockgate.dsl import Range, load
from lockgate.dsl.codes import lookup


def spec(fields: str) -> str:
    return f"""\
version: 1
contracts:
  Verdict: {fields}
flows:
  entry: main
  main:
    input: {{}}
    output: {{from: "${{check.output}}", contract: Verdict}}
    steps:
      - id: check
        evaluate: {{command: "./check.sh", timeout_ms: 5000}}
        out: Verdict
"""


def lg305(fields: str):
    return [d for d in load(spec(fields)).diagnostics if d.code == "LG305"]


def test_an_out_lacking_fields_every_result_has_is_an_error_at_out():
    (diag,) = lg305("{reason: string}")
    assert diag.range == Range.of(11, 13, 11, 20)
    assert diag.is_error and lookup("LG305").name == "EVALUATE_OUT_MISMATCH"
    assert diag.message == (
        "out contract Verdict of evaluate step 'check' lacks 'status', 'children', which every "
        "evaluator result has (an unknown field): every result fails it, and evaluate steps never retry")


def test_an_out_requiring_a_field_no_result_has_is_an_error():
    (diag,) = lg305("{status: string, children: array, reason: string, verdict: string}")
    assert diag.range == Range.of(11, 13, 11, 20)
    assert "requires 'verdict', which no evaluator result has" in diag.message


def test_every_problem_is_in_one_finding():
    (diag,) = lg305("{status: integer, reason: string, notes: string}")
    assert ("lacks 'children', which every evaluator result has (an unknown field); it requires "
            "'notes', which no evaluator result has; it declares status: integer, which no evaluator "
            "result's value fits") in diag.message


def test_a_status_enum_with_none_of_the_statuses_fits_no_result():
    (diag,) = lg305("{status: 'yes|no', children: array, reason: string}")
    assert "declares status: yes|no" in diag.message


@pytest.mark.parametrize("fields", [
    "{status: string, children: array, reason: string}",
    "{status: 'closed|open|failed', children: 'string[]', reason: string, score: 'number?', route: 'claude|codex?'}",
    "{status: 'closed|open', children: array, reason: string, score: number}",  # fits some results
    "{status: string, children: array, reason: string, note: 'string?'}",
])
def test_an_out_that_some_result_fits_is_clean(fields):
    assert load(spec(fields)).ok


def test_an_evaluate_step_without_out_is_not_checked():
    text = spec("{reason: string}").replace("        out: Verdict\n", "")
    assert [d for d in load(text).diagnostics if d.code == "LG305"] == []


def test_the_hint_writes_the_result_shape_as_a_contract_that_validates():
    """review s10 F8 #4: the hint's shape is contract syntax (it said ``children: any[]``, an
    LG301 if copied, and ``score?: number``): pasted as the out contract, it is clean."""
    (diag,) = lg305("{reason: string}")
    shape = diag.hint.split("an evaluator returns ", 1)[1].split("; ", 1)[0]
    assert shape == ("{status: closed|open|failed, children: array, reason: string, score: number?, "
                     "route: claude|codex?}")
    assert load(spec(shape)).ok, [(d.code, d.message) for d in load(spec(shape)).diagnostics]
