"""Lint warnings LG901-906 and LG908: each with a hint, only with lint=True."""

from __future__ import annotations

import textwrap

from checks_support import P, calling_sub, check, codes, errors, flow, only

from lockgate.dsl.diagnostics import Severity


def lint(text: str, **options):
    return [f for f in check(text, **options) if f.code.startswith("LG9")]


def test_lint_is_off_with_lint_false():
    text = flow("- {id: a, do: x, out: R}\n- {id: b, do: y, agent: gpt}")
    assert codes(lint(text)) == ["LG905", "LG906"]
    assert errors(text) == []


def test_unused_contract_but_not_when_referenced_through_another():
    text = flow("- {id: a, do: x, out: R}", contracts="R: {meta: 'Meta?'}\n  Meta: {a: string}\n  Spare: {b: string}")
    found = only(lint(text))
    assert (found.code, found.path, found.at) == ("LG901", ("contracts", "Spare"), "key")
    assert found.hint


def test_misspelt_out_does_not_also_make_the_contract_unused():
    assert "LG901" not in codes(check(flow("- {id: a, do: x, out: Rr}")))


CHAIN = """
    - {id: a, do: x, out: R, ensure: [{expr: "true"}]}
    - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: null}}
    - {id: b, do: y, out: R, after: [g], on_fail: c}
    - {id: c, do: z, out: R}
    - {id: d, do: w, out: R, after: [b]}
"""


def test_unreachable_router_chain_in_a_subflow_reports_the_first_step_only():
    sub = "input: {}\noutput: {from: '${a.output}', contract: R}\nsteps:\n" + textwrap.indent(
        textwrap.dedent(CHAIN).strip("\n"), "  ")
    found = only(lint(calling_sub(sub)), "LG902")
    assert found.path == ("flows", "sub", "steps", 2, "id")
    assert "runs as a subflow" in found.message and "gate 'g'" in found.message
    assert "2 steps after it" in found.message


def test_steps_after_a_null_approve_gate_at_the_root_run():
    assert "LG902" not in codes(lint(flow(CHAIN)))


def test_gate_with_different_approve_and_kill_targets_notes_the_reference_engine():
    found = only(lint(flow("""
        - {id: a, do: x, out: R, ensure: [{expr: "true"}]}
        - {id: g, after: [a], gate: {on_approve: ok, on_revise: null, on_kill: stop}}
        - {id: ok, do: y, out: R}
        - {id: stop, do: z, out: R}
    """)))
    assert (found.code, found.path) == ("LG908", P(1, "gate", "on_kill"))
    assert "Lockgate skips" in found.message and "reference engine" in found.message


def test_gate_with_a_kill_route_releases_its_dependents():
    assert "LG902" not in codes(lint(flow("""
        - {id: a, do: x, out: R}
        - {id: g, after: [a], gate: {on_approve: null, on_revise: null, on_kill: k}}
        - {id: k, do: y, out: R}
        - {id: b, do: y, out: R, after: [g]}
    """)))


def test_same_agent_review_points_at_the_agent_and_explains_why():
    found = only(lint(flow("""
        - {id: a, do: "write it", out: R, agent: codex}
        - {id: b, do: "Review ${a.output.v} for errors", out: R, agent: codex}
    """)))
    assert (found.code, found.path) == ("LG903", P(1, "agent"))
    assert "own work" in found.message and "claude" in found.hint


def test_same_default_agent_review_points_at_the_reference():
    found = only(lint(flow("""
        - {id: a, do: "write it", out: R}
        - {id: b, do: "Please critique ${a.output.v}", out: R}
    """)))
    assert (found.code, found.path, found.span) == ("LG903", P(1, "do"), (16, 29))


def test_different_agents_or_no_review_word_are_fine():
    assert lint(flow("""
        - {id: a, do: "write it", out: R}
        - {id: b, do: "Review ${a.output.v}", out: R, agent: codex}
        - {id: c, do: "Translate ${a.output.v}", out: R}
    """)) == []


def test_when_reading_an_unordered_step_hints_the_after_fix():
    found = only(lint(flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: y, out: R, when: "result.a.v == 'go'"}
    """)))
    assert (found.code, found.path, found.span) == ("LG904", P(1, "when"), (0, 8))
    assert found.hint == "add 'a' to the step's 'after' list: after: [a]"


def test_transitive_dependency_is_enough_for_when():
    assert lint(flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: "${a.output.v}", out: R}
        - {id: c, do: y, out: R, after: [b], when: "result.a.v == 'go'"}
    """)) == []


def test_unknown_agents_in_steps_and_stages_and_configured_agents():
    text = flow("""
        - {id: a, do: x, out: R, agent: claud}
        - id: f
          fanout: {over: "${a.output.items}", concurrency: 1, isolation: none, require: all,
                   merge: sequential, steps: [{do: "x ${item}", out: R, agent: local-llm}]}
    """)
    found = lint(text)
    assert [(f.code, f.path[3:], f.replacement) for f in found] == [
        ("LG905", (0, "agent"), "claude"),
        ("LG905", (1, "fanout", "steps", 0, "agent"), None),
    ]
    assert lint(text, agents=["local-llm", "claud"]) == []


def test_unchecked_agent_steps_and_stages():
    found = lint(flow("""
        - {id: a, do: x, out: R}
        - {id: b, do: y, ensure: [{expr: "result != null"}]}
        - {id: c, do: z}
        - id: f
          fanout: {over: "${a.output.items}", concurrency: 1, isolation: none, require: all,
                   merge: sequential, steps: [{do: "x ${item}"}, {do: "y", out: R}]}
    """))
    assert [(f.code, f.path[3:], f.at) for f in found] == [
        ("LG906", (2, "do"), "key"),
        ("LG906", (3, "fanout", "steps", 0, "do"), "key"),
    ]


def test_lint_codes_are_warnings():
    from lockgate.dsl.codes import lookup

    assert all(lookup(f"LG90{i}").severity == Severity.WARNING for i in range(1, 7))
