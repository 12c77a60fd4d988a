"""A step whose ``when`` (or ``set`` value, or fanout stage ``when``) reads its own output
(review s10, F6 #3): the step has no output yet, so the read is a type error whenever it is
evaluated (semantics §8.3) and the step is skipped. It is an LG606 error, as reading a gate's
output is, not the LG904 ordering warning (which is about a read that may or may not fail). A
read on a short-circuited branch is not always evaluated, and the message says so (F8 #5)."""

from __future__ import annotations

from lockgate.dsl import Range, Severity, load

HEAD = """\
version: 1
contracts: {Out: {t: string}, Items: {xs: 'string[]'}}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${a.output}", contract: Out}
    steps:
      - {id: a, do: x, out: Out}
"""


def diagnostics(steps: str):
    """The findings of the spec, less the unused-contract and unused-output lints."""
    return [d for d in load(HEAD + steps).diagnostics if d.code not in ("LG901", "LG907")]


def test_a_when_reading_its_own_step_is_an_error_at_the_read():
    found = diagnostics("""      - {id: c, after: [a], do: x, out: Out, when: "result.c.t == 'x'"}\n""")
    (diag,) = found
    assert (diag.code, diag.severity, diag.range) == ("LG606", Severity.ERROR, Range.of(9, 52, 9, 60))
    assert diag.message == ("result.c: 'c' is this step, which has no output while its 'when' is "
                            "evaluated: reading result.c fails (and the step is skipped) whenever "
                            "this part is evaluated")
    assert "ensure" in diag.hint


def test_a_set_value_reading_its_own_step_is_an_error():
    found = diagnostics("""      - {id: s, after: [a], set: {t: "result.s.t"}, out: Out}\n""")
    (diag,) = [d for d in found if d.code == "LG606"]
    assert diag.range == Range.of(9, 38, 9, 46)
    assert "its 'set' values are computed" in diag.message and "(and the value is false) whenever" in diag.message


def test_a_fanout_stage_when_reading_its_own_fanout_step_is_an_error():
    steps = """\
      - {id: i, do: x, out: Items}
      - id: fan
        fanout:
          over: "${i.output.xs}"
          concurrency: 1
          isolation: none
          require: all
          merge: sequential
          steps:
            - {do: "go ${item}", out: Out, when: "len(result.fan) > 0"}
"""
    found = [d for d in diagnostics(steps) if d.code == "LG606"]
    (diag,) = found
    assert diag.range == Range.of(18, 54, 18, 64)
    assert "its stages run" in diag.message and "(and the stage is skipped) whenever" in diag.message


def test_a_self_read_on_a_short_circuited_branch_is_not_said_to_always_fail():
    """review s10 F8 #5: with ``input.go`` true the step runs and the read is never evaluated;
    the error stays (the read fails whenever it is reached) but claims no "always"."""
    text = HEAD.replace("input: {}", "input: {go: boolean}") + (
        """      - {id: c, after: [a], do: x, out: Out, when: "input.go || result.c.t == 'x'"}\n""")
    (diag,) = [d for d in load(text).diagnostics if d.code == "LG606"]
    assert diag.is_error and "always" not in diag.message
    assert "whenever this part is evaluated" in diag.message


def test_reading_another_step_is_left_to_the_ordering_warning():
    found = diagnostics("""      - {id: c, do: x, out: Out, when: "result.a.t == 'x'"}\n""")
    assert [(d.code, d.range) for d in found] == [("LG904", Range.of(9, 40, 9, 48))]
