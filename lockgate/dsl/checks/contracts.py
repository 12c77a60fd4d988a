"""Contract names and types (§4 items 6-8): unparsable types (``LG301``), unknown contract
names (``LG302``) and recursive contracts (``LG303``), in ``contracts``, flow inputs, step and
stage ``out`` and ``output.contract``.

The type language itself belongs to :mod:`lockgate.dsl.contracts`; this module locates its
issues and adds did-you-mean for misspelt contract names. Field-name and shape problems are
left to the schema pass, so each problem is reported once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from itertools import islice

from ..diagnostics import Finding, YamlPath
from .context import Context
from .suggest import did_you_mean, suffix

TYPE_CODES = frozenset({"LG301", "LG302", "LG303"})
#: How many declared contracts a hint names.
LISTED = 20


def check(ctx: Context) -> Iterator[Finding]:
    yield from (f for f in ctx.contracts.issues if _is_type_issue(ctx, f))
    for flow in ctx.spec.flows.values():
        for finding in ctx.contracts.check_fields(flow.input, (*flow.at, "input")):
            if finding.code in TYPE_CODES and isinstance(flow.input.get(finding.path[-1]), str):
                yield finding
        if flow.output is not None and flow.output.contract is not None:
            yield from _name(ctx, flow.output.contract, (*flow.output.at, "contract"), "output.contract")
        for step in flow.steps:
            if step.out is not None:
                yield from _name(ctx, step.out, (*step.at, "out"), f"'out' of step '{step.id}'")
            if step.fanout is not None:
                for stage in step.fanout.stages:
                    if stage.out is not None:
                        yield from _name(ctx, stage.out, (*stage.at, "out"), f"'out' of stage {stage.index}")


def _is_type_issue(ctx: Context, finding: Finding) -> bool:
    """Keep type problems of string types; the schema pass owns names and shapes."""
    if finding.code not in TYPE_CODES or len(finding.path) < 3:
        return False
    decl = ctx.spec.contracts.get(finding.path[1])
    return decl is not None and isinstance(decl.fields.get(finding.path[2]), str)


def _name(ctx: Context, name: str, path: YamlPath, what: str) -> Iterator[Finding]:
    if name in ctx.spec.contracts:
        return
    guess = did_you_mean(name, ctx.spec.contracts)
    yield Finding(
        "LG302",
        f"{what} names contract '{name}', which is not declared{suffix(guess)}",
        path,
        replacement=guess,
        hint=None if guess else f"declared contracts: {_some(ctx.spec.contracts)}",
    )


def _some(names: Collection[str]) -> str:
    """The first :data:`LISTED` names, and how many more: a hint on every unknown name that
    listed thousands of contracts made the report quadratic in size (224 MB of JSON)."""
    if not names:
        return "none"
    more = f" and {len(names) - LISTED:,} more" if len(names) > LISTED else ""
    return ", ".join(islice(names, LISTED)) + more
