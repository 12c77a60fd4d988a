"""Consumer worktree fanouts: LG706-707."""

from __future__ import annotations

from checks_support import P, codes, errors, flow, only

FAN = """
- {{id: a, do: x, out: R}}
- id: fan
  fanout:
    over: "${{a.output.items}}"
    concurrency: 2
    isolation: {isolation}
    dispatch: {dispatch}
    require: all
    merge: sequential
    steps:
      - do: "work on ${{item}}"
        out: R
        when: "{when}"
        ensure: [{ensure}]
{tail}
"""
GATE = "- {id: vet, after: [fan], gate: {on_approve: null, on_revise: null, on_kill: null}}"


def doc(isolation="worktree", dispatch="consumer", when="item != ''", ensure="{expr: 'result.v != \"\"'}", tail=GATE):
    return flow(FAN.format(isolation=isolation, dispatch=dispatch, when=when, ensure=ensure, tail=tail),
                output="${a.output}")


def test_consumer_worktree_with_successor_gate_is_valid():
    assert errors(doc()) == []


def test_file_predicates_are_rejected_in_consumer_worktree_stages():
    found = errors(doc(when="file_exists(item)", ensure="{file_contains: {path: x, text: y}}, {expr: 'file_exists(\"a\") && true'}"))
    assert [(f.code, f.path[3:], f.span, f.at) for f in found] == [
        ("LG706", (1, "fanout", "steps", 0, "ensure", 0, "file_contains"), None, "key"),
        ("LG706", (1, "fanout", "steps", 0, "ensure", 1, "expr"), (0, 16), "value"),
        ("LG706", (1, "fanout", "steps", 0, "when"), (0, 17), "value"),
    ]


def test_file_predicates_are_fine_elsewhere():
    assert errors(doc(isolation="none", when="file_exists(item)")) == []
    assert errors(doc(dispatch="engine", ensure="{file_exists: report.md}")) == []


def test_successor_gate_required():
    found = only(errors(doc(tail="")))
    assert (found.code, found.path) == ("LG707", P(1, "fanout", "isolation"))


def test_successor_gate_with_when_or_routed_does_not_count():
    with_when = "- {id: vet, after: [fan], when: 'true', gate: {on_approve: null, on_revise: null, on_kill: null}}"
    assert codes(errors(doc(tail=with_when))) == ["LG707"]
    routed = (GATE.replace("after: [fan]", "after: [fan]") + "\n"
              "- {id: router, do: r, out: R, on_fail: vet}")
    assert codes(errors(doc(tail=routed))) == ["LG707"]


def test_gate_depending_through_a_reference_counts():
    tail = "- {id: vet, when: null, gate: {on_approve: null, on_revise: null, on_kill: null}, after: [fan]}"
    assert errors(doc(tail=tail)) == []
