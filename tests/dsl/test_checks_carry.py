"""Carry variables: LG711-719."""

from __future__ import annotations

from checks_support import calling_sub, codes, errors, flow, only

C = ("flows", "main", "carry")


def carry_flow(steps: str, carry: str, rounds: str = "max_rounds: 3", output: str = "${plan.output}") -> str:
    return flow(steps, extra=f"{rounds}\ncarry:\n{carry}", output=output)


VALID_STEPS = """
    - {id: plan, do: x, out: R}
    - {id: write, do: "draft with ${wave}", out: R, after: [plan]}
    - {id: review, after: [write], gate: {on_approve: null, on_revise: write, on_kill: null}}
"""


def test_valid_step_sourced_carry_with_revise():
    assert errors(carry_flow(VALID_STEPS, """
      wave:
        initial: "${plan.output.v}"
        on_revise: {review: "${write.output.v}"}
    """), ) == []


def test_carry_only_on_the_entry_flow():
    text = calling_sub("""
        input: {}
        output: {from: "${d.output}", contract: R}
        carry: {w: {initial: "${nope.output}"}}
        steps: [{id: d, do: x, out: R}]
    """)
    found = only(errors(text))
    assert (found.code, found.path, found.at) == ("LG711", ("flows", "sub", "carry"), "key")


def test_a_carry_variable_is_not_visible_inside_a_subflow():
    text = calling_sub("""
        input: {}
        output: {from: "${d.output}", contract: R}
        steps: [{id: d, do: "x ${w}", out: R}]
    """).replace("    input: {}\n    output: {from: \"${c.output}\"",
                 "    input: {}\n    carry: {w: {initial: \"${input.x}\"}}\n    output: {from: \"${c.output}\"", 1)
    text = text.replace("  main:\n    input: {}", "  main:\n    input: {x: string}", 1)
    found = only(errors(text))
    assert found.code == "LG407" and found.path[:2] == ("flows", "sub")
    assert "not visible inside a subflow" in found.message and "'with'" in found.hint


def test_carry_name_conflicts():
    found = errors(carry_flow(VALID_STEPS, """
      plan: {initial: "${input.topic}"}
      item: {initial: "${input.topic}"}
      wave: {initial: "${input.topic}"}
    """))
    assert [(f.code, f.path) for f in found] == [("LG712", (*C, "plan")), ("LG712", (*C, "item"))]


def test_initial_must_be_one_full_step_or_input_reference():
    found = errors(carry_flow(VALID_STEPS, """
      wave: {initial: "plan: ${plan.output.v}"}
      other: {initial: "${wave}"}
      bad: {initial: "${ plan }"}
    """))
    assert [(f.code, f.path[-2:]) for f in found] == [
        ("LG713", ("wave", "initial")), ("LG713", ("other", "initial")), ("LG401", ("bad", "initial")),
    ]


def test_initial_source_may_not_be_conditional():
    steps = """
        - {id: plan, do: x, out: R, when: "input.topic != ''", on_fail: rescue}
        - {id: rescue, do: x, out: R}
        - {id: g, after: [plan], gate: {on_approve: null, on_revise: null, on_kill: null}}
        - {id: write, do: "${a} ${b} ${c}", out: R, after: [plan, rescue, g]}
    """
    found = errors(carry_flow(steps, """
      a: {initial: "${plan.output.v}"}
      b: {initial: "${rescue.output.v}"}
      c: {initial: "${g.output}"}
    """, rounds=""))
    assert codes(found) == ["LG714", "LG714", "LG714"]
    assert ["when" in found[0].message, "routing target" in found[1].message, "gate" in found[2].message] == [True] * 3


def test_initial_is_typed_like_any_reference():
    found = errors(carry_flow(VALID_STEPS, """
      wave: {initial: "${plan.output.missing}"}
      x: {initial: "${planz.output}"}
      y: {initial: "${input.topik}"}
    """))
    assert [(f.code, f.path[-2]) for f in found] == [("LG404", "wave"), ("LG403", "x"), ("LG404", "y")]
    assert found[1].replacement == "plan"


def test_reading_before_the_initial_source():
    steps = """
        - {id: plan, do: "plan with ${wave}", out: R}
        - {id: early, do: "use ${wave}", out: R}
        - {id: late, do: "use ${wave}", out: R, after: [plan]}
    """
    found = errors(carry_flow(steps, """
      wave: {initial: "${plan.output.v}"}
    """, rounds=""))
    assert [(f.code, f.path[-2], f.span) for f in found] == [("LG715", 0, (10, 17)), ("LG715", 1, (4, 11))]
    assert "own output" in found[0].message and found[1].hint == "add 'plan' to the 'after' list of 'early'"


def test_input_sourced_carry_is_available_from_the_start():
    assert errors(carry_flow("""
        - {id: a, do: "use ${wave}", out: R}
    """, """
      wave: {initial: "${input.topic}"}
    """, rounds="", output="${a.output}")) == []


def test_on_revise_must_name_a_gate():
    found = errors(carry_flow(VALID_STEPS, """
      wave:
        initial: "${plan.output.v}"
        on_revise: {reviw: "${write.output.v}", plan: "${write.output.v}"}
    """))
    assert [(f.code, f.path[-1], f.replacement) for f in found] == [
        ("LG716", "reviw", "review"), ("LG716", "plan", None),
    ]


def test_on_revise_value_shape_and_typing():
    found = errors(carry_flow(VALID_STEPS, """
      wave:
        initial: "${plan.output.v}"
        on_revise: {review: "${write.output.nope}"}
    """))
    assert [(f.code, f.path[-1]) for f in found] == [("LG404", "review")]


def test_revising_gate_with_null_target():
    steps = """
        - {id: plan, do: x, out: R}
        - {id: write, do: "draft with ${wave}", out: R, after: [plan]}
        - {id: review, after: [write], gate: {on_approve: null, on_revise: null, on_kill: null}}
    """
    found = only(errors(carry_flow(steps, """
      wave:
        initial: "${plan.output.v}"
        on_revise: {review: "${write.output.v}"}
    """)))
    assert (found.code, found.path[-1]) == ("LG717", "review")


def test_revise_reset_must_cover_every_reader_and_gate_must_follow_them():
    steps = """
        - {id: plan, do: x, out: R}
        - {id: early, do: "a ${wave}", out: R, after: [plan]}
        - {id: write, do: "draft", out: R, after: [early]}
        - {id: side, do: "b ${wave}", out: R, after: [plan]}
        - {id: review, after: [write], gate: {on_approve: null, on_revise: write, on_kill: null}}
    """
    found = errors(carry_flow(steps, """
      wave:
        initial: "${plan.output.v}"
        on_revise: {review: "${write.output.v}"}
    """))
    assert codes(found) == ["LG718", "LG719"]
    assert "'early' and 'side'" in found[0].message
    assert "'side'" in found[1].message and "'early'" not in found[1].message
