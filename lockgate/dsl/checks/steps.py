"""Step identity: ids are unique within a flow (``LG501``)."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding
from .context import Context


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        first: dict[str, tuple] = {}
        for step in flow.steps:
            if step.id is None:
                continue
            if step.id in first:
                yield Finding(
                    "LG501",
                    f"duplicate step id '{step.id}' in flow '{flow.name}': "
                    f"step ids must be unique within a flow",
                    (*step.at, "id"),
                    hint="rename one of the steps; references and routes name steps by id",
                    related=((first[step.id], f"'{step.id}' is first defined here"),),
                )
            else:
                first[step.id] = (*step.at, "id")
