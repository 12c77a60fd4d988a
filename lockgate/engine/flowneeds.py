"""What a flow needs before it runs: its spec in hand, the agents it may dispatch to, and whether
it has ``judged`` ensures.

The runner reads these before planning a run so that every agent (and the judge's agent, when a
judged ensure may be reached) is resolved and preflighted up front: a missing binary or an unknown
agent name fails the run before any step starts, not halfway through it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def as_spec(spec: Any) -> Any:
    """A Spec from a Spec, a LoadResult, a path or YAML text (SpecError when it has errors)."""
    from ..dsl.ir import Spec
    from .engine import _coerce_spec, loaded_spec

    if isinstance(spec, Spec):
        return spec
    if hasattr(spec, "diagnostics") and hasattr(spec, "spec"):
        return loaded_spec(spec)
    if isinstance(spec, os.PathLike):
        spec = Path(spec)
    return _coerce_spec(spec)


def agent_names(spec: Any, flow: str | None = None) -> list[str]:
    """Every agent name the flow (and the subflows it runs) may dispatch to, in order."""
    names: dict[str, None] = {}
    for step in flow_steps(spec, flow):
        if step.do is not None:
            names[step.agent or "claude"] = None
        if step.fanout is not None:
            for stage in step.fanout.stages:
                names[_stage_agent(step, stage)] = None
    return list(names)


def isolated_agent_names(spec: Any, flow: str | None = None) -> list[str]:
    """The agents the flow (and its subflows) may dispatch fanout items the engine isolates in
    git worktrees to (``isolation: worktree``, engine dispatch): where they may run is checked
    before a run starts."""
    names: dict[str, None] = {}
    for step in flow_steps(spec, flow):
        if step.fanout is not None and step.fanout.engine_worktrees:
            for stage in step.fanout.stages:
                names[_stage_agent(step, stage)] = None
    return list(names)


def _stage_agent(step: Any, stage: Any) -> str:
    return stage.agent or step.agent or "claude"


def uses_judged(spec: Any, flow: str | None = None) -> bool:
    """Whether the flow (or a subflow it runs) has a ``judged`` ensure anywhere."""
    for step in flow_steps(spec, flow):
        ensures = [*step.ensure, *(e for st in (step.fanout.stages if step.fanout else ()) for e in st.ensure)]
        if any(e.kind == "judged" for e in ensures):
            return True
    return False


def flow_steps(spec: Any, flow: str | None) -> Iterator[Any]:
    """The steps of the flow, then of each subflow it runs (each flow once)."""
    start = flow or spec.entry or next(iter(spec.flows), None)
    todo, seen = [start], set()
    while todo:
        name = todo.pop()
        if name in seen or spec.flows.get(name) is None:
            continue
        seen.add(name)
        for step in spec.flows[name].steps:
            yield step
            if step.run:
                todo.append(step.run)
