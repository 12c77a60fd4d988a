"""Routing: targets exist (``LG502``), no step routes to itself (``LG503``), no cycles (``LG504``).

Unknown targets are read from the step fields; self-edges and cycles come from
:mod:`lockgate.dsl.graph`, which adds edges in the validator's order and names the edge that
closes each cycle.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding, YamlPath
from ..graph import Edge, cycles, flow_edges, graph_memo, self_edges
from ..ir import Flow, Step
from .context import Context
from .suggest import did_you_mean, suffix

_EDGE_WORDS = {
    "after": "'after' entry",
    "data": "reference",
    "on_fail": "on_fail route",
    "approve": "on_approve route",
    "kill": "on_kill route",
    "revise": "on_revise route",
}


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        # every rule here reads only the flow's name, graph and step targets: one answer per graph
        yield from graph_memo(flow, "routing", _findings)


def _findings(flow: Flow) -> tuple[Finding, ...]:
    return (*_unknown_targets(flow), *_self_edges(flow), *_cycles(flow))


def targets(step: Step) -> Iterator[tuple[YamlPath, str, str]]:
    """Every step id ``step`` names as an after entry or route: (path, field name, id)."""
    for i, dep in enumerate(step.after):
        yield (*step.at, "after", i), "after", dep
    if step.on_fail is not None:
        yield (*step.at, "on_fail"), "on_fail", step.on_fail
    if step.gate is not None:
        for key in ("on_approve", "on_kill", "on_revise"):
            target = getattr(step.gate, key)
            if target is not None:
                yield (*step.gate.at, key), key, target


def _unknown_targets(flow: Flow) -> Iterator[Finding]:
    ids = [s.id for s in flow.steps if s.id is not None]
    for step in flow.steps:
        for path, key, target in targets(step):
            if target in flow.step_map:
                continue
            guess = did_you_mean(target, ids)
            yield Finding(
                "LG502",
                f"{key} names '{target}', which is not a step of flow '{flow.name}'{suffix(guess)}",
                path,
                replacement=guess,
                hint=None if guess else f"steps of '{flow.name}': {', '.join(ids) or 'none'}",
            )


def _self_edges(flow: Flow) -> Iterator[Finding]:
    for edge in self_edges(flow):
        sid = edge.source
        if edge.kind == "data":
            message = f"step '{sid}' references its own output; a step cannot read itself"
        elif edge.kind == "after":
            message = f"step '{sid}' lists itself in 'after'; a step cannot wait for itself"
        elif edge.kind == "revise":
            message = f"gate '{sid}' revises to itself; on_revise must name a step before the gate"
        else:
            message = f"the {_EDGE_WORDS[edge.kind]} of '{sid}' names the step itself"
        yield Finding("LG503", message, edge.path, span=edge.span)


def _cycles(flow: Flow) -> Iterator[Finding]:
    found = cycles(flow)
    by_pair: dict[tuple[str, str], Edge] = {}
    for edge in flow_edges(flow) if found else ():
        by_pair.setdefault((edge.source, edge.target), edge)
    for edge, cycle in found:
        named = " -> ".join(cycle)
        related = tuple(
            (by_pair[pair].path, f"{_EDGE_WORDS[by_pair[pair].kind]} {pair[0]} -> {pair[1]}")
            for pair in zip(cycle[1:], cycle[2:])
            if pair in by_pair
        )
        yield Finding(
            "LG504",
            f"this {_EDGE_WORDS[edge.kind]} closes a cycle: {named}; "
            f"steps must form a directed acyclic graph (use a gate's on_revise to loop back)",
            edge.path,
            span=edge.span,
            related=related,
        )
