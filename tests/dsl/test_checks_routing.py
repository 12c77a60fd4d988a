"""Steps, routing, cycles and gates: LG501-506."""

from __future__ import annotations

from checks_support import P, codes, errors, flow, only


def test_duplicate_step_id_is_reported_at_the_second_with_the_first_related():
    found = only(errors(flow("""
        - {id: a, do: x, out: R}
        - {id: a, do: y, out: R}
    """)), "LG501")
    assert found.path == P(1, "id")
    assert found.related[0][0] == P(0, "id")


def test_unknown_after_target_with_did_you_mean():
    found = only(errors(flow("""
        - {id: a, do: x, out: R, after: [biuld]}
        - {id: build, do: y, out: R}
    """)))
    assert (found.code, found.path, found.replacement) == ("LG502", P(0, "after", 0), "build")
    assert "'biuld'" in found.message and "did you mean 'build'" in found.message


def test_unknown_on_fail_and_gate_routes():
    found = errors(flow("""
        - {id: a, do: x, out: R, on_fail: nowhere}
        - {id: g, after: [a], gate: {on_approve: zzz, on_revise: null, on_kill: null}}
    """))
    assert [(f.code, f.path) for f in found] == [
        ("LG502", P(0, "on_fail")),
        ("LG502", P(1, "gate", "on_approve")),
    ]


def test_self_targets():
    found = errors(flow("""
        - {id: a, do: "x ${a.output.v}", out: R, after: [a], on_fail: a}
        - {id: g, after: [a], gate: {on_approve: g, on_revise: g, on_kill: null}}
    """, extra="max_rounds: 1"))
    assert [(f.code, f.path, f.span) for f in found] == [
        ("LG503", P(0, "after", 0), None),
        ("LG503", P(0, "do"), (2, 15)),
        ("LG503", P(0, "on_fail"), None),
        ("LG503", P(1, "gate", "on_approve"), None),
        ("LG503", P(1, "gate", "on_revise"), None),
    ]


def test_cycle_names_the_cycle_at_the_closing_edge():
    found = only(errors(flow("""
        - {id: a, do: "use ${b.output.v}", out: R}
        - {id: b, do: y, out: R, after: [a]}
    """)))
    assert found.code == "LG504"
    assert found.path == P(1, "after", 0)
    assert "a -> b -> a" in found.message
    assert found.related == ((P(0, "do"), "reference b -> a"),)


def test_cycle_through_a_reference_points_at_the_reference_span():
    found = only(errors(flow("""
        - {id: a, do: y, out: R, after: [b]}
        - {id: b, do: "use ${a.output.v} now", out: R}
    """)))
    assert (found.code, found.path, found.span) == ("LG504", P(1, "do"), (4, 17))
    assert "a -> b -> a" in found.message


def test_each_independent_cycle_once_and_routes_count():
    found = errors(flow("""
        - {id: a, do: x, out: R, after: [c], on_fail: c}
        - {id: c, do: y, out: R}
        - {id: d, do: x, out: R, after: [e]}
        - {id: e, do: y, out: R, after: [d]}
    """))
    assert codes(found) == ["LG504", "LG504"]
    # dependency edges are added before routes, so the route is blamed for its cycle
    assert "d -> e -> d" in found[0].message and found[0].path == P(3, "after", 0)
    assert "a -> c -> a" in found[1].message and found[1].path == P(0, "on_fail")


def test_revise_requires_max_rounds_reported_once_at_the_first_gate():
    found = only(errors(flow("""
        - {id: a, do: x, out: R}
        - {id: g, after: [a], gate: {on_approve: null, on_revise: a, on_kill: null}}
        - {id: h, after: [g], gate: {on_approve: null, on_revise: a, on_kill: null}}
    """)))
    assert (found.code, found.path) == ("LG506", P(1, "gate", "on_revise"))
    assert "1 more gate" in found.message and found.hint


def test_revise_target_must_be_an_ancestor():
    found = only(errors(flow("""
        - {id: a, do: x, out: R}
        - {id: side, do: y, out: R}
        - {id: g, after: [a], gate: {on_approve: null, on_revise: side, on_kill: null}}
    """, extra="max_rounds: 2")))
    assert (found.code, found.path) == ("LG505", P(2, "gate", "on_revise"))


def test_revise_back_edge_is_not_a_cycle_and_ancestry_goes_through_routes():
    assert errors(flow("""
        - {id: a, do: x, out: R, on_fail: b}
        - {id: b, do: y, out: R}
        - {id: g, after: [b], gate: {on_approve: null, on_revise: a, on_kill: null}}
    """, extra="max_rounds: 2")) == []


def test_after_naming_a_later_step_is_valid():
    assert errors(flow("""
        - {id: a, do: "x ${b.output.v}", out: R, after: [c]}
        - {id: b, do: y, out: R}
        - {id: c, do: z, out: R}
    """)) == []
