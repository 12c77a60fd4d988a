"""LG909: a ``${...}`` in a ``file_exists`` path or a ``file_contains`` path or text is checked
as written (semantics §3.2: those fields are not scanned), so the ensure looks for that very text
and fails every run, saying only that it is false. A warning at the text, with the expression
that checks what was meant; file predicates written as expressions are not flagged."""

from __future__ import annotations

from lockgate.dsl import Range, Severity, load

SPEC = """\
version: 1
contracts: {O: {t: string}}
flows:
  entry: m
  m:
    input: {name: string}
    output: {from: "${a.output}", contract: O}
    steps:
      - id: a
        do: "write"
        out: O
        ensure:
          - file_exists: "out/${input.name}.md"
          - file_contains: {path: "notes.md", text: "${input.name}"}
          - expr: "file_exists('out/' + input.name + '.md')"
          - file_exists: "out/plain.md"
"""


def test_templates_in_file_predicates_are_flagged_at_their_text():
    found = [d for d in load(SPEC).diagnostics if d.code == "LG909"]
    assert [(d.severity, d.range) for d in found] == [(Severity.WARNING, Range.of(12, 25, 12, 47)),
                                                      (Severity.WARNING, Range.of(13, 52, 13, 67))]
    assert found[0].message == ("'file_exists' checks 'out/${input.name}.md' as written: a ${...} in it is not "
                                "filled in, so the ensure looks for that very text")
    assert found[0].hint == "to check values, use an expression: expr: \"file_exists('out/' + input.name + '.md')\""
    assert "file_contains('notes.md', input.name)" in found[1].hint


def test_the_expressions_the_hints_give_are_clean():
    fixed = SPEC.replace('- file_exists: "out/${input.name}.md"', "- expr: \"file_exists('out/' + input.name + '.md')\"")
    fixed = fixed.replace('- file_contains: {path: "notes.md", text: "${input.name}"}',
                          "- expr: \"file_contains('notes.md', input.name)\"")
    assert [d.code for d in load(fixed).diagnostics] == []


def test_a_fanout_stage_ensure_is_checked_too():
    stage = SPEC.replace("""      - id: a
        do: "write"
        out: O
        ensure:""", """      - id: a
        fanout:
          over: "${input.names}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "write ${item}"
              out: O
              ensure:""").replace("input: {name: string}", "input: {name: string, names: 'string[]'}")
    stage = stage.replace('{from: "${a.output}", contract: O}', '{from: "${a.output[0]}", contract: O}')
    stage = "\n".join(line if not line.startswith("          - ") else "    " + line for line in stage.splitlines())
    assert [d.code for d in load(stage).diagnostics if d.code == "LG909"] == ["LG909", "LG909"]
