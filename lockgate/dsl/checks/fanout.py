"""Consumer worktree fanouts (§4 items 25-26): in the entry flow, a fanout with
``dispatch: consumer`` and ``isolation: worktree`` runs its items in the consumer's worktrees,
which the engine cannot see. Its stages therefore may not use file predicates (``LG706``),
and a gate must review the result before anything else runs (``LG707``).

``fanout.over`` must resolve to a list (§6.8): a reference the contracts type as anything else
fails the step every time it starts, so it is ``LG410``, like an ``over`` that is not one full
reference (which is checked with the other references).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding
from ...errors import ExprError
from ..expr import compile as compile_expr
from ..expr.typecheck import kind_of_type
from ..graph import dependencies, routing_targets
from ..ir import Flow, Stage, Step
from ..refs import scan
from .context import Context
from .expressions import over_type

FILE_PREDICATES = frozenset({"file_exists", "file_contains"})


def check(ctx: Context) -> Iterator[Finding]:
    for each in ctx.spec.flows.values():
        for step in each.steps:
            if step.kind == "fanout" and step.fanout is not None:
                yield from _over_not_a_list(ctx, each, step)
    flow = ctx.entry
    if flow is None:
        return
    for step in flow.steps:
        fan = step.fanout
        if step.kind != "fanout" or fan is None:
            continue
        if fan.dispatch != "consumer" or fan.isolation != "worktree":
            continue
        for stage in fan.stages:
            yield from _file_predicates(stage)
        if step.id is not None and ctx.graph_complete(flow) and not _has_successor_gate(flow, step.id):
            yield Finding(
                "LG707",
                f"fanout '{step.id}' dispatches to the consumer in worktrees, so its changes are "
                f"merged outside the engine; it needs a gate that directly follows it (depends on "
                f"it, has no 'when' and is not a routing target) to review them",
                (*fan.at, "isolation"),
                hint=f"add a gate step with 'after: [{step.id}]'",
            )


def _over_not_a_list(ctx: Context, flow: Flow, step: Step) -> Iterator[Finding]:
    declared = over_type(ctx, flow, step)
    kind = kind_of_type(declared)
    if kind is None or kind == "array":
        return
    ref = scan(step.fanout.over).full
    declared_text = f" ({declared})" if str(declared) != kind else ""
    yield Finding(
        "LG410",
        f"fanout.over must be a list, but {ref.text} is {'an' if kind == 'object' else 'a'} {kind}"
        f"{declared_text}; point it at an array, like '${{plan.output.items}}' or '${{input.files}}'",
        (*step.fanout.at, "over"),
        span=ref.span,
    )


def _file_predicates(stage: Stage) -> Iterator[Finding]:
    why = ("the engine cannot see a consumer's worktree, so file predicates cannot be checked "
           "in stages of a dispatch: consumer, isolation: worktree fanout")
    for ensure in stage.ensure:
        if ensure.kind in FILE_PREDICATES:
            yield Finding("LG706", f"'{ensure.kind}' in this stage: {why}", (*ensure.at, ensure.kind), at="key")
        elif ensure.kind == "expr" and ensure.expr is not None:
            yield from _calls(ensure.expr, (*ensure.at, "expr"), why)
    if stage.when is not None:
        yield from _calls(stage.when, (*stage.at, "when"), why)


def _calls(source: str, path, why: str) -> Iterator[Finding]:
    try:
        calls = compile_expr(source).calls
    except ExprError:
        return  # the expression checks report it
    for call in calls:
        if call.name in FILE_PREDICATES:
            yield Finding("LG706", f"{call.name}() in this stage: {why}", path, span=call.span)


def _has_successor_gate(flow: Flow, fanout_id: str) -> bool:
    targets = routing_targets(flow)
    return any(
        _qualifies(step, fanout_id, flow, targets) for step in flow.steps if step.kind == "gate"
    )


def _qualifies(step: Step, fanout_id: str, flow: Flow, targets) -> bool:
    return (
        step.id is not None
        and step.when is None
        and step.id not in targets
        and fanout_id in dependencies(flow, step.id)
    )
