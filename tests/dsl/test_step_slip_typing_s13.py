"""A quick fix for a reference named like a step but missing its ``.output`` is offered only
when the fixed reference type-checks along its whole path (review s13a #4).

c114ea7 checked only the first segment against the step's contract, and not at all for a
fanout: ``${fan.path}`` became ``${fan.output.path}`` (a fanout's output must be indexed),
``${build[0]}`` became ``${build.output[0]}`` (Build is an object), ``${build.meta.ownr}`` became
``${build.output.meta.ownr}`` (no such field), and ``output.from: ${fan}`` became the unindexed
``${fan.output}`` right after saying a fanout source must be indexed. Each fix then failed
validation with LG404. Now an unknown field on the guessed path is replaced by its one
suggestion, and a guess that still does not type-check is no fix: the message says why.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl.loader import load

SPEC = """version: 1
contracts:
  Build:
    result: string
    items: string[]
    meta: Meta
  Meta: {owner: string}
  Item: {path: string}
  Final: {summary: string}
flows:
  entry: main
  main:
    input: {topic: string}
    max_rounds: 2
    output: {from: "%s", contract: Final}
    steps:
      - id: build
        do: "x ${input.topic}"
        agent: claude
        out: Build
      - id: plain
        do: "y"
        agent: claude
        ensure:
          - expr: "file_exists('a')"
      - id: decide
        after: [build]
        gate: {on_approve: null, on_revise: build, on_kill: null}
      - id: fan
        after: [decide]
        fanout:
          over: "${build.output.items}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Review ${item}"
              agent: claude
              out: Item
      - id: final
        do: "%s"
        agent: claude
        out: Final
        after: [fan, plain]
"""

# the review's 30 shapes of a step-named reference in a ``do`` template
TYPOS = ["${build.outptu}", "${build.outptu.result}", "${build.outptu.reslt}", "${build.result}",
         "${build.reslt}", "${build.input.result}", "${build.result.x}", "${build}", "${build[0]}",
         "${build.items[0]}", "${build.Output}", "${build.outputs.result}", "${build.value}",
         "${build.out.result}", "${build.owner}", "${build.meta.ownr}", "${build.mta.owner}",
         "${build.outptu.meta.ownr}", "${build.result.meta}", "${build.values}",
         "${fan.result}", "${fan.outptu}", "${fan.path}", "${fan.outptu[0].path}", "${fan[0].path}",
         "${decide.outptu}", "${decide.result}", "${plain.outptu}", "${plain.result}", "${plain}"]


def in_do(reference: str) -> str:
    return SPEC % ("${final.output}", "use " + reference)


def in_from(reference: str) -> str:
    return SPEC % (reference, "ok")


def _offset(text: str, pos) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[:pos.line]) + pos.character


def _fixed(text: str, diagnostic) -> str:
    for edit in sorted(diagnostic.fix.edits, key=lambda e: _offset(text, e.range.start), reverse=True):
        text = text[:_offset(text, edit.range.start)] + edit.new_text + text[_offset(text, edit.range.end):]
    return text


def _errors(text: str):
    return [d for d in load(text).diagnostics if d.is_error]


def _slip(text: str, code: str):
    """The one ``code`` diagnostic of ``text`` (LG407 in a template, LG708 in output.from)."""
    found = [d for d in _errors(text) if d.code == code]
    assert len(found) == 1, _errors(text)
    return found[0]


def _every_fix_validates(text: str) -> None:
    for diagnostic in _errors(text):
        if diagnostic.fix is not None:
            after = [(d.code, d.message) for d in _errors(_fixed(text, diagnostic))]
            assert after == [], (diagnostic.message, after)


def test_the_spec_is_valid() -> None:
    assert _errors(in_do("${build.output.result}")) == []


@pytest.mark.parametrize("typo", TYPOS)
def test_every_fix_offered_for_the_reviews_shapes_validates(typo: str) -> None:
    _every_fix_validates(in_do(typo))


@pytest.mark.parametrize(("typo", "why"), [
    ("${fan.path}", "index it first, like ${fan.output[0].path}"),
    ("${build[0]}", "Build is an object"),
    ("${build.result.x}", "string has no fields or items"),
    ("${build.result.meta}", "string has no fields or items"),
])
def test_a_guess_that_does_not_type_check_is_no_fix_and_the_message_says_why(typo: str, why: str) -> None:
    found = _slip(in_do(typo), "LG407")
    assert found.fix is None
    assert "would not be valid either" in found.message and why in found.message
    assert "did you mean" not in found.message


@pytest.mark.parametrize(("typo", "meant"), [
    ("${build.outptu.reslt}", "${build.output.result}"),
    ("${build.meta.ownr}", "${build.output.meta.owner}"),
    ("${build.outptu.meta.ownr}", "${build.output.meta.owner}"),
    ("${build.mta.ownr}", "${build.output.meta.owner}"),
    ("${fan[0].pth}", "${fan.output[0].path}"),
])
def test_a_misspelt_field_further_on_is_fixed_to_its_one_suggestion(typo: str, meant: str) -> None:
    text = in_do(typo)
    found = _slip(text, "LG407")
    assert f"did you mean '{meant}'" in found.message
    repaired = _fixed(text, found)
    assert f"use {meant}" in repaired and _errors(repaired) == []


def test_a_field_further_on_with_no_suggestion_is_no_fix() -> None:
    found = _slip(in_do("${build.meta.zzzzzz}"), "LG407")
    assert found.fix is None and 'unknown field "zzzzzz" in Meta' in found.message


def test_a_fanout_field_is_not_taken_for_a_slip_of_output() -> None:
    """``result`` is a common slip of ``.output``, but here each fanout result has a field
    ``result``: ``${fan.output}`` would silently read something else."""
    text = in_do("${fan.result}").replace("Item: {path: string}", "Item: {result: string}")
    found = _slip(text, "LG407")
    assert found.fix is None and "index it first" in found.message


@pytest.mark.parametrize("typo", ["${fan.outptu}", "${fan}", "${fan.path}", "${fan.result}"])
def test_output_from_a_fanout_is_not_fixed_to_an_unindexed_output(typo: str) -> None:
    found = _slip(in_from(typo), "LG708")
    assert found.fix is None and "index it first, like ${fan.output[0]" in found.message


@pytest.mark.parametrize("typo", ["${final.outptu}", "${final}", "${final.result}", "${final.summary}",
                                  "${final.sumary}", "${final.outputs}", "${final.Output}", "${fan[0]}",
                                  "${fan.outptu[0]}", "${decide.outptu}"])
def test_every_fix_offered_in_output_from_validates(typo: str) -> None:
    _every_fix_validates(in_from(typo))


def test_a_step_whose_contract_is_unknown_gets_no_unchecked_fix() -> None:
    text = in_do("${build.result}").replace("out: Build", "out: Buidl")
    found = _slip(text, "LG407")
    assert found.fix is None and ".output" in found.message


# typo'd paths: the valid output paths of build and fan, with .output left out or misspelt,
# and each field perhaps misspelt too

_VALID = [("build", ()), ("build", ("result",)), ("build", ("items",)), ("build", ("items", 0)),
          ("build", ("meta",)), ("build", ("meta", "owner")), ("fan", ()), ("fan", (0,)), ("fan", (0, "path"))]
_OUTPUT_SLIPS = ["", "outptu", "ouput", "Output", "outputs", "output_", "out", "result", "value", "input", "otput"]


@st.composite
def _misspelt(draw, word: str) -> str:
    how = draw(st.sampled_from(["keep", "keep", "drop", "swap", "double", "case", "other"]))
    i = draw(st.integers(0, len(word) - 1))
    if how == "drop" and len(word) > 1:
        return word[:i] + word[i + 1:]
    if how == "swap" and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if how == "double":
        return word[:i] + word[i] + word[i:]
    if how == "case":
        return word.capitalize()
    if how == "other":
        return draw(st.sampled_from(["x", "owner", "path", "result", "items", "meta", "zz"]))
    return word


@st.composite
def _typod_reference(draw) -> str:
    step, path = draw(st.sampled_from(_VALID))
    output = draw(st.sampled_from(_OUTPUT_SLIPS))
    parts = [f"[{p}]" if isinstance(p, int) else "." + draw(_misspelt(p)) for p in path]
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from([".x", "[1]", ".owner", ".path"])))
    return "${" + step + ("." + output if output else "") + "".join(parts) + "}"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reference=_typod_reference(), where=st.sampled_from([in_do, in_from]))
def test_every_fix_offered_for_a_typod_path_validates(reference: str, where) -> None:
    _every_fix_validates(where(reference))


ORDERED = """version: 1
contracts:
  N: {text: string}
flows:
  entry: m
  m:
    input: {}
    output: {from: "${test.output}", contract: N}
    steps:
      - {id: build, do: "b ${test.outptu.text}", out: N}
      - {id: test, after: [build], do: "again ${build.outptu.text} ${test.outptu.text}", out: N}
"""


def test_no_fix_makes_a_step_read_itself_or_a_step_after_it() -> None:
    """`build` reading `test`, which comes after it, would close a cycle (LG504); `test` reading
    itself is LG503: such guesses are no fix (review s13c F2: both were preferred fixes)."""
    found = sorted((d.range.start.line, d.message.split(", but ")[-1], d.fix) for d in load(ORDERED).diagnostics
                   if d.code == "LG407")
    assert [(line, why) for line, why, fix in found if fix is None] == [
        (9, "'build' cannot read it: 'test' comes after 'build'"),
        (10, "'test' cannot read it: a step cannot read its own output")]
    [fix] = [fix for _, _, fix in found if fix is not None]
    assert fix.edits[0].new_text == "${build.output.text}"
