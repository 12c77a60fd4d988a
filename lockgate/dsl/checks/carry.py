"""Carry variables (§1.9, §4 items 27-39): root flow only, well-named, initialised from one
full step or input reference that always runs, read only after that source, and reset so that
every reader sees a revised value.

Carry references create no graph edges, so every ordering rule here is checked against
dependency edges (``after`` and step references) or the revise reset closure of §6.7.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding, YamlPath
from ..graph import depends_on, reaches, reset_closure, routing_targets, step_refs
from ..ir import CarryVar, Flow
from ..refs import Ref, scan
from .context import Context
from .reftypes import ref_type_findings
from .suggest import did_you_mean, suffix

RESERVED = ("item", "prev", "input")


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        if not flow.carry:
            continue
        if ctx.restricted(flow):
            yield Finding(
                "LG711",
                f"carry is declared on flow '{flow.name}', but only the entry flow "
                f"'{ctx.spec.entry}' may declare carry variables",
                (*flow.at, "carry"),
                at="key",
            )
            continue
        readers = _readers(flow)
        for var in flow.carry.values():
            yield from _name(flow, var)
            source, problems = _source(ctx, flow, var.initial, (*var.at, "initial"), initial=True)
            yield from problems
            ordered = ctx.graph_complete(flow)
            if source is not None and ordered:
                yield from _before_initial(flow, var, source, readers.get(var.name, {}))
            yield from _revisions(ctx, flow, var, readers.get(var.name, {}), ordered)


def _readers(flow: Flow) -> dict[str, dict[str, tuple[YamlPath, Ref]]]:
    """carry name -> reading step id -> where it first reads it."""
    out: dict[str, dict[str, tuple[YamlPath, Ref]]] = {}
    for step in flow.steps:
        if step.id is None:
            continue
        for field, ref in step_refs(step, flow):
            if ref.kind == "carry" and not field.is_expression and ref.name in flow.carry:
                out.setdefault(ref.name, {}).setdefault(step.id, (field.path, ref))
    return out


def _name(flow: Flow, var: CarryVar) -> Iterator[Finding]:
    if var.name in RESERVED:
        why = f"'{var.name}' is a reserved binding"
    elif var.name in flow.step_map:
        why = f"'{var.name}' is also a step id of flow '{flow.name}'"
    else:
        return
    yield Finding(
        "LG712",
        f"carry variable name clashes: {why}; ${{{var.name}}} would be ambiguous",
        var.at,
        at="key",
        hint="rename the carry variable",
    )


def _source(
    ctx: Context, flow: Flow, text: str | None, path: YamlPath, *, initial: bool
) -> tuple[str | None, list[Finding]]:
    """Check a carry value: one full step or input reference. Returns the source step id (for
    step references that type-check) and the findings."""
    if text is None:
        return None, []  # missing or not a string: the schema pass reports it
    template = scan(text)
    if template.errors:
        return None, [Finding("LG401", e.message, path, span=e.span) for e in template.errors]
    ref = template.full
    if ref is None or ref.kind not in ("step", "input"):
        what = "a carry reference" if ref is not None and ref.kind == "carry" else f"{text!r}"
        return None, [
            Finding(
                "LG713",
                f"a carry value must be exactly one full step-output or input reference "
                f"(like '${{plan.output.items}}' or '${{input.topic}}'), found {what}",
                path,
            )
        ]
    if ref.kind == "step" and initial:
        conditional = _conditional(flow, ref.name)
        if conditional:
            return None, [Finding("LG714", f"the initial source '{ref.name}' {conditional}; "
                                  f"a carry's initial value must come from a step that always runs",
                                  path, span=ref.span)]
    problems = list(ref_type_findings(ctx, flow, path, ref))
    source = ref.name if ref.kind == "step" and not problems else None
    return source, problems


def _conditional(flow: Flow, sid: str | None) -> str | None:
    step = flow.step_map.get(sid or "")
    if step is None:
        return None
    if step.when is not None:
        return "has a 'when' and may be skipped"
    if step.kind == "gate":
        return "is a gate, which has no output"
    if sid in routing_targets(flow):
        return "is a routing target and runs only when routed"
    return None


def _before_initial(flow: Flow, var: CarryVar, source: str, readers) -> Iterator[Finding]:
    for reader, (path, ref) in readers.items():
        if reader == source:
            why = f"step '{reader}' reads ${{{var.name}}}, which its own output initialises"
        elif not depends_on(flow, reader, source):
            why = (f"step '{reader}' reads ${{{var.name}}} but does not depend on '{source}', "
                   f"whose output initialises it")
        else:
            continue
        yield Finding(
            "LG715",
            f"{why}; a carry variable can be read only after its initial source has run",
            path,
            span=ref.span,
            hint=None if reader == source else f"add '{source}' to the 'after' list of '{reader}'",
        )


def _revisions(ctx: Context, flow: Flow, var: CarryVar, readers, ordered: bool) -> Iterator[Finding]:
    gates = [s.id for s in flow.steps if s.kind == "gate" and s.id is not None]
    for gate_id, value in var.on_revise.items():
        at: YamlPath = (*var.at, "on_revise", gate_id)
        gate = flow.step_map.get(gate_id)
        if gate is None or gate.kind != "gate" or gate.gate is None:
            guess = did_you_mean(str(gate_id), gates)
            yield Finding(
                "LG716",
                f"carry '{var.name}' on_revise names '{gate_id}', which is not a gate step of "
                f"flow '{flow.name}'{suffix(guess)}",
                at,
                at="key",
                replacement=guess,
            )
            continue
        if isinstance(value, str):
            _, problems = _source(ctx, flow, value, at, initial=False)
            yield from problems
        target = gate.gate.on_revise
        if target is None:
            yield Finding(
                "LG717",
                f"carry '{var.name}' is revised by gate '{gate_id}', but that gate's on_revise is "
                f"null, so it can never revise",
                at,
                at="key",
                related=(((*gate.gate.at, "on_revise"), "the gate's on_revise"),),
            )
            continue
        if target == gate_id or target not in flow.step_map or not ordered or not reaches(flow, target, gate_id):
            continue  # routing reports the target; an incomplete graph is reported where it breaks
        yield from _reset_covers(flow, var, gate_id, target, readers, at)


def _reset_covers(flow: Flow, var: CarryVar, gate_id: str, target: str, readers, at: YamlPath):
    closure = reset_closure(flow, target)
    missed = [r for r in readers if r not in closure]
    if missed:
        yield Finding(
            "LG718",
            f"revising gate '{gate_id}' resets from '{target}', which does not re-run "
            f"{_names(missed)}; a step that reads ${{{var.name}}} would keep its old value",
            at,
            at="key",
            related=tuple((readers[r][0], f"'{r}' reads the carry here") for r in missed),
        )
    late = [r for r in readers if r != gate_id and not depends_on(flow, gate_id, r)]
    if late:
        yield Finding(
            "LG719",
            f"gate '{gate_id}' does not come after {_names(late)}, which read{'s' if len(late) == 1 else ''} "
            f"${{{var.name}}}; the gate must depend on every reader so their work is reviewed "
            f"before it is revised",
            at,
            at="key",
            hint=f"add {', '.join(late)} to the 'after' list of gate '{gate_id}'",
        )


def _names(ids: list[str]) -> str:
    quoted = [f"'{i}'" for i in ids]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
