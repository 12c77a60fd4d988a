"""lockgate.dsl.graph: edges, dependency helpers, the reset closure and the drawable graph."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from lockgate.dsl import graph
from lockgate.dsl.ir import build_spec


def spec_of(steps: str, **flow_extra):
    flow = {"input": {"topic": "string"}, "output": {"from": "${a.output}", "contract": "R"}}
    flow.update(flow_extra)
    flow["steps"] = yaml.safe_load(textwrap.dedent(steps))
    return build_spec({"version": 1, "contracts": {"R": {"v": "string"}}, "flows": {"entry": "main", "main": flow}})


def main_flow(steps: str, **extra):
    return spec_of(steps, **extra).flows["main"]


def test_after_and_references_are_dependency_edges_in_every_scanned_field():
    flow = main_flow("""
        - {id: a, do: "x", out: R}
        - {id: b, do: "y", out: R}
        - {id: c, set: {v: "result.a.v"}, out: R, when: "${b.output.v} == 'x'"}
        - {id: d, do: "z ${a.output.v}", after: [c], ensure: [{expr: "${b.output.v} == 1"}]}
    """)
    assert graph.dependencies(flow, "c") == {"b"}  # result.a in set is not an edge
    assert graph.dependencies(flow, "d") == {"a", "b", "c"}
    assert graph.dependents(flow, "a") == {"d"}
    assert graph.upstream(flow, "d") == {"a", "b", "c"}
    assert graph.depends_on(flow, "d", "b") and not graph.depends_on(flow, "c", "a")


def test_after_may_name_a_later_step():
    flow = main_flow("""
        - {id: a, do: "x", out: R, after: [b]}
        - {id: b, do: "y", out: R}
    """)
    assert graph.topological_generations(flow) == [frozenset({"b"}), frozenset({"a"})]
    assert graph.cycles(flow) == []


def test_fanout_stage_and_run_with_references_are_edges():
    flow = main_flow("""
        - {id: a, do: "x", out: R}
        - {id: b, do: "y", out: R}
        - id: fan
          fanout:
            over: "${a.output.items}"
            concurrency: 2
            isolation: none
            require: all
            merge: sequential
            steps: [{do: "use ${item} with ${b.output.v}", when: "item != ''"}]
        - {id: sub, run: other, with: {x: "${fan.output[0].v}", nested: ["${b.output}"]}}
    """)
    assert graph.dependencies(flow, "fan") == {"a", "b"}
    assert graph.dependencies(flow, "sub") == {"fan", "b"}


def test_routes_and_reset_closure_follow_dependencies_and_routes_but_not_revise():
    flow = main_flow("""
        - {id: plan, do: "p", out: R}
        - {id: write, do: "w ${plan.output}", out: R, on_fail: rescue}
        - {id: rescue, do: "r", out: R}
        - {id: check, after: [write], gate: {on_approve: ship, on_revise: write, on_kill: null}}
        - {id: ship, do: "s", out: R}
        - {id: side, do: "q", out: R}
    """, max_rounds=2)
    targets = graph.routing_targets(flow)
    assert set(targets) == {"rescue", "ship"}
    assert targets["rescue"] == (graph.Route("write", "on_fail", "rescue"),)
    assert graph.reset_closure(flow, "write") == {"write", "rescue", "check", "ship"}
    assert graph.reset_closure(flow, "plan") == {"plan", "write", "rescue", "check", "ship"}
    assert graph.reset_closure(flow, "nope") == frozenset()
    assert graph.reaches(flow, "write", "check") and not graph.reaches(flow, "check", "write")


def test_reset_closure_iterates_to_a_fixpoint_through_mixed_edges():
    flow = main_flow("""
        - {id: a, do: "1", out: R, on_fail: b}
        - {id: b, do: "2", out: R}
        - {id: c, do: "3 ${b.output}", out: R}
        - {id: g, after: [c], gate: {on_approve: d, on_revise: a, on_kill: d}}
        - {id: d, do: "4", out: R}
    """, max_rounds=1)
    assert graph.reset_closure(flow, "a") == {"a", "b", "c", "g", "d"}


def test_cycle_is_named_at_the_closing_edge_and_kept_out_of_the_dag():
    flow = main_flow("""
        - {id: a, do: "x ${b.output}", out: R}
        - {id: b, do: "y", out: R, after: [a]}
    """)
    [(edge, cycle)] = graph.cycles(flow)
    assert (edge.source, edge.target, edge.kind) == ("a", "b", "after")
    assert edge.path == ("flows", "main", "steps", 1, "after", 0)
    assert cycle == ["a", "b", "a"]
    # still defined for drawing and ordering
    assert graph.topological_generations(flow) == [frozenset({"b"}), frozenset({"a"})]


def test_self_edges_are_ignored_by_the_dag():
    flow = main_flow("""
        - {id: a, do: "x ${a.output}", out: R, after: [a, ghost]}
    """)
    assert graph.dependencies(flow, "a") == frozenset()
    assert [e.kind for e in graph.flow_edges(flow)] == ["after", "data"]
    assert graph.topological_generations(flow) == [frozenset({"a"})]


def test_analysis_is_cached_per_flow_object():
    flow = main_flow("""
        - {id: a, do: "x", out: R}
        - {id: b, do: "${a.output}", out: R}
    """)
    assert graph._analysis(flow) is graph._analysis(flow)
    assert graph.reset_closure(flow, "a") is graph.reset_closure(flow, "a")


def test_flow_graph_nodes_and_labelled_edges():
    spec = spec_of("""
        - {id: a, do: "x", out: R, agent: codex}
        - {id: b, do: "y ${a.output}", after: [a], out: R}
        - {id: g, after: [b], gate: {on_approve: null, on_revise: a, on_kill: k}}
        - {id: k, set: {v: "'killed'"}, out: R}
        - id: f
          after: [a]
          fanout: {over: "${input.topic}", concurrency: 1, isolation: none, require: all,
                   merge: sequential, steps: [{do: "1"}, {do: "2", agent: codex}]}
    """, max_rounds=1)
    g = graph.flow_graph(spec, "main")
    assert g.nodes["a"] == {"kind": "do", "agent": "codex", "label": "a", "index": 0}
    assert g.nodes["b"]["agent"] == "claude"
    assert g.nodes["g"]["agent"] is None and g.nodes["g"]["kind"] == "gate"
    assert g.nodes["f"]["agent"] == "claude,codex"
    assert g.edges["a", "b"]["kind"] == "data" and g.edges["a", "b"]["kinds"] == ("data", "after")
    assert g.edges["g", "a"]["kind"] == "revise"
    assert g.edges["g", "k"]["kind"] == "kill"
    with pytest.raises(KeyError):
        graph.flow_graph(spec, "missing")


def test_scanned_fields_cover_the_table_of_section_3_2():
    flow = main_flow("""
        - id: s
          set: {v: "1", w: 2}
          out: R
          when: "true"
          ensure: [{expr: "result.v == 1"}, {file_exists: "${not.scanned}"}]
        - {id: d, do: "x", out: R, iterate: {max: 2, until: "true"}}
        - {id: r, run: other, with: {a: "x", b: {c: ["y"]}}}
        - {id: g, gate: {on_approve: null, on_revise: null, on_kill: null}}
    """)
    contexts = [(f.context, f.path[3:]) for s in flow.steps for f in graph.scanned_fields(s)]
    assert contexts == [
        ("when", (0, "when")),
        ("set", (0, "set", "v")),
        ("ensure", (0, "ensure", 0, "expr")),
        ("do", (1, "do")),
        ("until", (1, "iterate", "until")),
        ("with", (2, "with", "a")),
        ("with", (2, "with", "b", "c", 0)),
    ]


def test_invalid_shapes_do_not_break_the_helpers():
    spec = build_spec({"version": 1, "flows": {"entry": "m", "m": {"steps": [None, 3, {"id": 5}, {"after": "x"}]}}})
    flow = spec.flows["m"]
    assert graph.topological_generations(flow) == []
    assert graph.flow_graph(spec, "m").number_of_nodes() == 0
