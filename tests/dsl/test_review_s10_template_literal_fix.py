"""LG601 on a ``${...}`` template inside a quoted literal of an expression (review s10, F6 #2).

``'${a.output.t}' == 'x'`` compares a constant string; the fix must replace the whole literal,
quotes included, so it becomes ``result.a.t == 'x'``, not the constant ``'result.a.t'``. A
template that is only part of a literal has no one-replacement fix.
"""

from __future__ import annotations

from lockgate.dsl import Range, load

SPEC = """\
version: 1
contracts: {O: {t: string}}
flows:
  entry: m
  m:
    input: {q: string}
    output: {from: "${a.output}", contract: O}
    steps:
      - {id: a, do: x, out: O}
"""


def lg601(step: str):
    """The one LG601 of a spec whose second step is ``step``, and the text of its line."""
    text = SPEC + f"      {step}\n"
    found = [d for d in load(text).diagnostics if d.code == "LG601"]
    assert len(found) == 1, found
    return found[0], text.splitlines()[9]


def applied(diag, line: str) -> str:
    (edit,) = diag.fix.edits
    start, end = edit.range.start.character, edit.range.end.character
    return line[:start] + edit.new_text + line[end:]


def test_a_template_that_is_a_whole_single_quoted_literal_is_replaced_with_its_quotes():
    diag, line = lg601("""- {id: b, after: [a], do: x, out: O, when: "'${a.output.t}' == 'x'"}""")
    assert diag.range == Range.of(9, 50, 9, 65)
    assert diag.fix.edits[0].range == diag.range
    assert applied(diag, line).endswith('''when: "result.a.t == 'x'"}''')


def test_a_whole_double_quoted_literal_escaped_in_yaml_is_replaced_with_its_quotes():
    diag, line = lg601(r"""- {id: b, after: [a], do: x, out: O, when: "'x' == \"${input.q}\""}""")
    assert diag.range == Range.of(9, 57, 9, 71)
    assert applied(diag, line).endswith('''when: "'x' == input.q"}''')


def test_a_whole_literal_in_a_single_quoted_yaml_scalar_is_replaced_with_its_doubled_quotes():
    diag, line = lg601("""- {id: b, after: [a], do: x, out: O, when: '''${a.output.t}'' == ''x'''}""")
    assert diag.range == Range.of(9, 50, 9, 67)
    assert applied(diag, line).endswith("""when: 'result.a.t == ''x'''}""")


def test_a_template_outside_any_literal_keeps_its_own_span():
    diag, line = lg601("""- {id: b, after: [a], do: x, out: O, when: "${a.output.t} == 'x'"}""")
    assert diag.range == Range.of(9, 50, 9, 63)
    assert applied(diag, line).endswith('''when: "result.a.t == 'x'"}''')


def test_a_template_that_is_part_of_a_literal_has_no_fix():
    diag, _ = lg601("""- {id: b, after: [a], do: x, out: O, when: "'v ${a.output.t}' == 'x'"}""")
    assert diag.range == Range.of(9, 53, 9, 66)
    assert diag.fix is None
    assert "did you mean" not in diag.message
    assert diag.hint == "the template is part of a string literal: join the literal's text and result.a.t with '+'"


def test_a_quote_escaped_inside_an_earlier_literal_does_not_end_it():
    diag, line = lg601(r"""- {id: b, after: [a], do: x, out: O, when: "'it\\'s' != '${a.output.t}'"}""")
    assert diag.range == Range.of(9, 62, 9, 77)
    assert applied(diag, line).endswith('''when: "'it\\\\'s' != result.a.t"}''')
