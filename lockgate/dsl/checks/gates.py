"""Gate revision: ``on_revise`` needs the flow's ``max_rounds`` (``LG506``) and must target a
strict ancestor of the gate (``LG505``). Unknown or self targets are routing's (``LG502/503``)."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding
from ..graph import reaches
from ..ir import Flow
from .context import Context


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        yield from _max_rounds(flow)
        if ctx.graph_complete(flow):
            yield from _ancestors(flow)


def _revising_gates(flow: Flow):
    for step in flow.steps:
        if step.gate is not None and step.gate.on_revise is not None and step.id is not None:
            yield step


def _max_rounds(flow: Flow) -> Iterator[Finding]:
    if flow.max_rounds is not None:
        return
    gates = list(_revising_gates(flow))
    if not gates:
        return
    first = gates[0]
    others = f" (and {len(gates) - 1} more gate{'s' if len(gates) > 2 else ''})" if len(gates) > 1 else ""
    yield Finding(
        "LG506",
        f"gate '{first.id}'{others} can revise, but flow '{flow.name}' declares no max_rounds; "
        f"a revising gate needs a bound on the total number of revisions",
        (*first.gate.at, "on_revise"),
        hint=f"add 'max_rounds: 3' (a positive integer) to flow '{flow.name}'",
    )


def _ancestors(flow: Flow) -> Iterator[Finding]:
    for gate in _revising_gates(flow):
        target = gate.gate.on_revise
        if target == gate.id or target not in flow.step_map:
            continue
        if not reaches(flow, target, gate.id):
            yield Finding(
                "LG505",
                f"gate '{gate.id}' revises to '{target}', which does not lead to the gate; "
                f"on_revise must target a strict ancestor (a step the gate depends on, "
                f"directly or through other steps)",
                (*gate.gate.at, "on_revise"),
                hint=f"make '{gate.id}' depend on '{target}' (e.g. 'after: [{target}]'), "
                f"or revise to one of its ancestors",
            )
