"""Flows and subflows: LG701-705."""

from __future__ import annotations

from checks_support import calling_sub, codes, errors, only

BASE = """
version: 1
contracts: {{R: {{v: string}}}}
flows:
  entry: {entry}
  main:
    input: {{topic: string}}
    output: {{from: "${{call.output}}", contract: R}}
    steps:
      - {{id: call, run: {callee}, with: {with_}}}
  sub:
    input: {{text: string, n: integer}}
    output: {{from: "${{s.output}}", contract: R}}
    steps:
      - {{id: s, do: "work on ${{input.text}}", out: R}}
"""


def doc(entry="main", callee="sub", with_="{text: '${input.topic}', n: 1}") -> str:
    return BASE.format(entry=entry, callee=callee, with_=with_)


def test_valid_call():
    assert errors(doc()) == []


def test_unknown_entry_with_did_you_mean():
    found = only(errors(doc(entry="mian")), "LG701")
    assert (found.path, found.replacement) == (("flows", "entry"), "main")


def test_unknown_callee():
    found = only(errors(doc(callee="subb")))
    assert (found.code, found.path, found.replacement) == ("LG702", ("flows", "main", "steps", 0, "run"), "sub")


def test_with_extra_and_missing_keys():
    found = errors(doc(with_="{txt: x}"))
    assert [(f.code, f.path, f.at) for f in found] == [
        ("LG703", ("flows", "main", "steps", 0, "with", "txt"), "key"),
        ("LG703", ("flows", "main", "steps", 0, "with"), "key"),
    ]
    assert found[0].replacement == "text"
    assert "input 'n'" in found[1].message  # 'text' is covered by the did-you-mean above


def test_recursion_is_named_at_the_closing_run():
    text = """
    version: 1
    contracts: {R: {v: string}}
    flows:
      entry: main
      main:
        input: {}
        output: {from: "${again.output}", contract: R}
        steps:
          - {id: again, run: main, with: {}}
    """
    found = only(errors(text))
    assert (found.code, found.path) == ("LG704", ("flows", "main", "steps", 0, "run"))
    assert "main -> main" in found.message


def test_mutual_recursion_without_entry_restriction():
    text = """
    version: 1
    contracts: {R: {v: string}}
    flows:
      entry: nowhere
      a:
        input: {}
        output: {from: "${x.output}", contract: R}
        steps: [{id: x, run: b, with: {}}]
      b:
        input: {}
        output: {from: "${y.output}", contract: R}
        steps: [{id: y, run: a, with: {}}]
    """
    found = errors(text)
    assert codes(found) == ["LG701", "LG704"]
    assert found[1].path == ("flows", "b", "steps", 0, "run") and "b -> a -> b" in found[1].message


def test_subflow_body_restricted():
    text = calling_sub("""
        input: {}
        output: {from: "${d.output}", contract: R}
        steps:
          - {id: d, run: main, with: {}}
          - id: f
            fanout: {over: "${input.x}", concurrency: 1, isolation: none, require: all, merge: sequential,
                     steps: [{do: x}]}
    """)
    found = [f for f in errors(text) if f.code == "LG705"]
    assert [(f.path, f.at) for f in found] == [
        (("flows", "sub", "steps", 0, "run"), "key"),
        (("flows", "sub", "steps", 1, "fanout"), "key"),
    ]
    assert "LG704" not in codes(errors(text))  # the nested run is the problem, once


def test_subflow_may_contain_gates():
    text = calling_sub("""
        input: {}
        output: {from: "${d.output}", contract: R}
        max_rounds: 2
        steps:
          - {id: d, do: x, out: R}
          - {id: g, after: [d], gate: {on_approve: null, on_revise: d, on_kill: null}}
    """)
    assert errors(text) == []
