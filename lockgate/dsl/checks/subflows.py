"""Flows and subflows: the entry exists (``LG701``), ``run`` names a flow (``LG702``) with
exactly its inputs (``LG703``), calls never recurse (``LG704``) and only the entry flow may
contain ``fanout`` or ``run`` (``LG705``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import networkx as nx

from ..diagnostics import Finding
from ..ir import Flow, Step
from .context import Context
from .suggest import did_you_mean, suffix


def check(ctx: Context) -> Iterator[Finding]:
    yield from _entry(ctx)
    for flow in ctx.spec.flows.values():
        yield from _restricted(ctx, flow)
        for step in flow.steps:
            if step.kind == "run" and step.run is not None:
                yield from _call(ctx, step)
    yield from _recursion(ctx)


def _entry(ctx: Context) -> Iterator[Finding]:
    entry = ctx.spec.entry
    if entry is None or entry in ctx.spec.flows:
        return
    names = list(ctx.spec.flows)
    guess = did_you_mean(entry, names)
    yield Finding(
        "LG701",
        f"flows.entry names '{entry}', which is not a flow of this spec{suffix(guess)}",
        ("flows", "entry"),
        replacement=guess,
        hint=None if guess else f"flows: {', '.join(names) or 'none'}",
    )


def _restricted(ctx: Context, flow: Flow) -> Iterator[Finding]:
    if not ctx.restricted(flow):
        return
    for step in flow.steps:
        if step.kind in ("fanout", "run"):
            yield Finding(
                "LG705",
                f"'{step.kind}' is not allowed in flow '{flow.name}': only the entry flow "
                f"'{ctx.spec.entry}' may contain fanout or run (subflows nest one level)",
                (*step.at, step.kind),
                at="key",
            )


def _call(ctx: Context, step: Step) -> Iterator[Finding]:
    callee = ctx.spec.flows.get(step.run)
    if callee is None:
        guess = did_you_mean(step.run, ctx.spec.flows)
        yield Finding(
            "LG702",
            f"run names '{step.run}', which is not a flow of this spec{suffix(guess)}",
            (*step.at, "run"),
            replacement=guess,
        )
        return
    if not isinstance(step.with_, Mapping):
        return  # missing or not a mapping: the schema pass reports it
    expected = [k for k in callee.input if isinstance(k, str)]
    given = [k for k in step.with_ if isinstance(k, str)]
    missing = [k for k in expected if k not in step.with_]
    extra = [k for k in given if k not in callee.input]
    for key in extra:
        guess = did_you_mean(key, missing)
        if guess is None and len(extra) == 1 and len(missing) == 1:
            guess = missing[0]  # one key in place of another: a rename
        if guess:
            missing.remove(guess)  # one misspelt key is one problem
        yield Finding(
            "LG703",
            f"'{key}' is not an input of flow '{callee.name}'{suffix(guess)}",
            (*step.at, "with", key),
            at="key",
            replacement=guess,
            hint=f"flow '{callee.name}' takes: {', '.join(expected) or 'no inputs'}",
        )
    if missing:
        names = ", ".join(f"'{k}'" for k in missing)
        yield Finding(
            "LG703",
            f"'with' misses input{'s' if len(missing) > 1 else ''} {names} of flow "
            f"'{callee.name}'; with must give exactly the called flow's inputs",
            (*step.at, "with"),
            at="key",
        )


def _recursion(ctx: Context) -> Iterator[Finding]:
    """Calls are added in document order; the call that closes a cycle is reported."""
    calls = nx.DiGraph()
    for flow in ctx.spec.flows.values():
        if ctx.restricted(flow):
            continue  # its run steps are already LG705
        for step in flow.steps:
            if step.kind != "run" or step.run not in ctx.spec.flows:
                continue
            if step.run == flow.name:
                cycle = [flow.name, flow.name]
            elif calls.has_node(step.run) and calls.has_node(flow.name) and nx.has_path(calls, step.run, flow.name):
                cycle = [flow.name, *nx.shortest_path(calls, step.run, flow.name)]
            else:
                calls.add_edge(flow.name, step.run)
                continue
            yield Finding(
                "LG704",
                f"this call closes a cycle of flows: {' -> '.join(cycle)}; subflows cannot recurse",
                (*step.at, "run"),
            )
