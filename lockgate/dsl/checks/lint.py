"""Advisory warnings (``LG9xx``): things that validate but are probably not what was meant.

Each warning says why it matters and carries a hint; none of them stops a run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from ..diagnostics import Finding, YamlPath
from ...errors import ContractError, ExprError
from ..expr import compile as compile_expr
from ..graph import (
    DEFAULT_AGENT,
    dependencies,
    depends_on,
    flow_facts,
    graph_memo,
    reaches,
    reset_closure,
    routing_targets,
    step_agent,
    step_refs,
    topological_generations,
)
from ..ir import Ensure, Flow, Spec, Step
from ..refs import scan
from ..types import ArrayOf, Named, OptionalOf, TypeExpr, parse_type
from .context import Context
from .expressions import segment_spans
from .suggest import did_you_mean, suffix

REVIEW_WORDS = re.compile(
    r"\b(review|critique|critici[sz]e|audit|assess|evaluate|grade|judge|inspect|proofread|"
    r"double-check|verify)\w*",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)
def _reviews(text: str) -> bool:
    """Whether a ``do`` text asks for a review (cached by text)."""
    return REVIEW_WORDS.search(text) is not None


def check(ctx: Context) -> Iterator[Finding]:
    yield from unused_contracts(ctx.spec)
    called = subflow_names(ctx.spec)
    for flow in ctx.spec.flows.values():
        if ctx.graph_complete(flow):
            yield from gate_route_findings(flow, flow.name in called)
            yield from stranded_fail_routes(flow)
            yield from unordered_reads(flow)
            yield from unused_outputs(flow)
        yield from same_agent_reviews(flow)
        yield from unknown_agents(ctx, flow)
        yield from unchecked_steps(flow)
        yield from literal_file_templates(flow)


# -- LG901 ------------------------------------------------------------------------------------


def named_refs(type_text: object) -> set[str]:
    """Contract names a field type string refers to (none when it does not parse)."""
    try:
        node: TypeExpr = parse_type(type_text)  # type: ignore[arg-type]
    except ContractError:
        return set()
    while isinstance(node, (OptionalOf, ArrayOf)):
        node = node.inner if isinstance(node, OptionalOf) else node.element
    return {node.name} if isinstance(node, Named) else set()


def used_contracts(spec: Spec) -> set[str]:
    """Contracts reachable from a step or stage ``out``, a flow output or a flow input."""
    roots: set[str] = set()
    for flow in spec.flows.values():
        if flow.output is not None and flow.output.contract:
            roots.add(flow.output.contract)
        for type_text in flow.input.values():
            roots |= named_refs(type_text)
        for step in flow.steps:
            if step.out:
                roots.add(step.out)
            if step.fanout is not None:
                roots |= {stage.out for stage in step.fanout.stages if stage.out}
    used, todo = set(), [r for r in roots if r in spec.contracts]
    while todo:
        name = todo.pop()
        if name in used:
            continue
        used.add(name)
        for type_text in spec.contracts[name].fields.values():
            todo.extend(r for r in named_refs(type_text) if r in spec.contracts)
    return used


def unused_contracts(spec: Spec) -> Iterator[Finding]:
    used = used_contracts(spec)
    misspelt = {did_you_mean(name, spec.contracts) for name in _undeclared_names(spec)}
    for name, decl in spec.contracts.items():
        if name not in used and name not in misspelt:
            yield Finding(
                "LG901",
                f"contract '{name}' is not used by any step, stage, flow input or output",
                decl.at,
                at="key",
                hint="remove it, or name it in an 'out' or 'output.contract'; an unused contract "
                "is often a sign of a misspelt 'out'",
            )


def _undeclared_names(spec: Spec) -> set[str]:
    """Contract names written in ``out``/``output.contract`` that are not declared: a
    contract they misspell is not "unused", the misspelling is the problem (LG302)."""
    named: set[str] = set()
    for flow in spec.flows.values():
        if flow.output is not None and flow.output.contract:
            named.add(flow.output.contract)
        for step in flow.steps:
            named |= {step.out} if step.out else set()
            if step.fanout is not None:
                named |= {stage.out for stage in step.fanout.stages if stage.out}
    return {n for n in named if n not in spec.contracts}


# -- LG902, LG908 ----------------------------------------------------------------------------
#
# What the engine does with gate routes (lockgate/engine/gates.py, advance.py): a route target
# the gate did not route to is skipped with the steps after it that do not also wait on the
# branch taken (advance.untaken_by), so both branches of a gate settle; a null on_approve
# completes only the gate at the root (its dependents run), but completes the whole subflow
# inside one (semantics §6.7), so there the gate's dependents run only if a kill route releases
# them. A null on_kill fails the run (or the run step) either way.


def subflow_names(spec: Spec) -> frozenset[str]:
    """Flows some ``run`` step calls (one naming the entry flow is LG704; the entry stays a root)."""
    return frozenset(step.run for flow in spec.flows.values() for step in flow.steps
                     if step.kind == "run" and step.run and step.run != spec.entry)


def gate_route_findings(flow: Flow, subflow: bool) -> tuple[Finding, ...]:
    """LG902 and LG908 for ``flow``; both read only the graph and what step signatures hold,
    plus whether the flow runs as a subflow: one answer per graph and place."""
    key = "LG902/subflow" if subflow else "LG902/root"
    return graph_memo(flow, key, lambda f: (*unreachable_steps(f, subflow), *split_gate_routes(f)))


def unreachable_steps(flow: Flow, subflow: bool) -> Iterator[Finding]:
    """Steps that can never run in a subflow: those waiting for a gate whose approval (a null
    ``on_approve``) completes the subflow and whose kill (a null ``on_kill``) fails it, and
    everything behind them. At the root every step can run, so there is nothing to report.

    Reachability is a fixpoint: a step can run when every dependency can finish and, for a
    routing target, when some router can run. Only the first step of an unreachable chain is
    reported; the message counts the steps stranded behind it (by dependency or route).
    """
    if not subflow:
        return
    ids = list(flow.step_map)
    # any order reaches the same fixpoint; a topological one gets there in a single pass
    order = [sid for generation in topological_generations(flow) for sid in sorted(generation)]
    placed = set(order)
    order += [sid for sid in ids if sid not in placed]
    targets = routing_targets(flow)
    runnable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for sid in order:
            if sid in runnable:
                continue
            deps = dependencies(flow, sid)
            if not deps <= runnable or any(_ends_subflow(flow.step_map[d]) for d in deps):
                continue
            if sid in targets and not any(r.source in runnable for r in targets[sid]):
                continue
            runnable.add(sid)
            changed = True
    stuck = [sid for sid in ids if sid not in runnable]
    for sid in stuck:
        gate = _ending_gate(flow, sid)
        if gate is None:
            continue  # stranded behind another unreachable step, which is reported
        behind = [s for s in stuck if s != sid and s in reset_closure(flow, sid)]
        tail = f" ({len(behind)} step{'s' if len(behind) > 1 else ''} after it are stranded too)" if behind else ""
        yield Finding(
            "LG902",
            f"step '{sid}' can never run when flow '{flow.name}' runs as a subflow: it waits for "
            f"gate '{gate}', whose approval completes the subflow (on_approve: null) and whose "
            f"kill fails it{tail}",
            (*flow.step_map[sid].at, "id"),
            hint=f"route on_approve of '{gate}' to the step that should run next, or remove it",
        )


def _ends_subflow(step: Step) -> bool:
    """A gate whose approval completes its subflow and whose kill fails it releases nobody."""
    gate = step.gate
    return step.kind == "gate" and gate is not None and gate.on_approve is None and gate.on_kill is None


def _ending_gate(flow: Flow, sid: str) -> str | None:
    """The gate that strands ``sid`` directly, when the reason is its own (not a step before it)."""
    enders = sorted(d for d in dependencies(flow, sid) if _ends_subflow(flow.step_map[d]))
    return enders[0] if enders else None


def split_gate_routes(flow: Flow) -> Iterator[Finding]:
    """A gate that approves to one step and kills to another: Lockgate skips the branch not
    taken, but the reference engine never skips a gate route target (semantics §8.13), so
    there the run stops with no runnable steps. A porting note, not a Lockgate problem."""
    for step in flow.steps:
        gate = step.gate
        if gate is None or None in (gate.on_approve, gate.on_kill) or gate.on_approve == gate.on_kill:
            continue
        yield Finding(
            "LG908",
            f"gate '{step.id}' approves to '{gate.on_approve}' and kills to '{gate.on_kill}': "
            f"Lockgate skips the branch not taken (the step and what follows it only); the reference engine "
            f"would leave it pending and "
            f"stop with no runnable steps",
            (*gate.at, "on_kill"),
            hint="for a spec that also runs on the reference engine, route approve and kill to "
            "the same step (and branch on a 'when' there), or set on_kill to null (a kill then ends the "
            "flow); not on_approve: the gate's own dependents then run on a kill too",
        )


# -- LG910 ----------------------------------------------------------------------------------------


def stranded_fail_routes(flow: Flow) -> Iterator[Finding]:
    """An ``on_fail`` target that waits on a step after the step whose failure it takes over (by
    dependencies, or routes of steps after it): that step never runs once the failure is routed
    (it is on the branch not taken), so the target is skipped with everything after it
    (advance.untaken_by), and the reference engine would stop with no runnable steps. Waiting on
    the failing step itself is fine."""
    for step in flow.steps:
        target = step.on_fail
        if not target or target == step.id or target not in flow.step_map:
            continue
        blocking = sorted(dep for dep in dependencies(flow, target)
                          if dep != step.id and reaches(flow, step.id, dep))
        if not blocking:
            continue
        yield Finding(
            "LG910",
            f"step '{step.id}' routes its failure to '{target}', but '{target}' waits on "
            f"'{blocking[0]}', which runs only after '{step.id}' succeeds: when '{step.id}' fails, "
            f"'{target}' is skipped, and so is every step after it",
            (*step.at, "on_fail"),
            hint=f"drop '{blocking[0]}' from what '{target}' waits on (its after list, or the ${{...}} "
            f"references that read it), or route the failure to a step that does not come after '{step.id}'",
        )


# -- LG903 ------------------------------------------------------------------------------------


def same_agent_reviews(flow: Flow) -> Iterator[Finding]:
    """A ``do`` step that reviews another agent step's output with the same agent."""
    for step in flow.steps:
        if step.kind != "do" or step.do is None or not _reviews(step.do):
            continue
        reviewer = step_agent(step)
        seen: set[str] = set()
        for field, ref in step_refs(step, flow):
            if field.context != "do" or ref.kind != "step" or ref.name in seen or ref.name == step.id:
                continue
            seen.add(ref.name or "")
            author = flow.step_map.get(ref.name or "")
            if author is None or _author_agent(author) != reviewer:
                continue
            yield Finding(
                "LG903",
                f"step '{step.id}' reviews the output of '{author.id}' with the same agent "
                f"('{reviewer}'); a model reviewing its own work tends to share its blind spots "
                f"and approve its own mistakes",
                (*step.at, "agent") if step.agent else (*step.at, "do"),
                span=None if step.agent else ref.span,
                hint=f"give '{step.id}' a different agent (e.g. 'agent: "
                f"{'codex' if reviewer != 'codex' else 'claude'}') so the review is independent",
            )


def _author_agent(step: Step) -> str | None:
    if step.kind == "fanout" and step.fanout is not None and step.fanout.stages:
        return step.fanout.stages[-1].agent or DEFAULT_AGENT
    return step_agent(step)


# -- LG904 ------------------------------------------------------------------------------------


def unordered_reads(flow: Flow) -> Iterator[Finding]:
    """``when``/``set`` reading ``result.<id>`` of a step that is not guaranteed to have run."""
    for step, known in zip(flow.steps, flow_facts(flow)):
        if step.id is None:
            continue
        for field in known.step_map_reads:
            try:
                paths = compile_expr(field.text).member_paths
            except ExprError:
                continue
            reported: set[str] = set()
            for member in paths:
                if member.root != "result" or not member.path or not isinstance(member.path[0], str):
                    continue
                read = member.path[0]
                if read in reported or read == step.id or _no_output(flow, read) or depends_on(flow, step.id, read):
                    continue
                reported.add(read)
                after = ", ".join([*step.after, read])
                yield Finding(
                    "LG904",
                    f"'{field.context.replace('stage_', 'stage ')}' reads result.{read}, but '{step.id}' "
                    f"does not depend on '{read}': it may be evaluated before '{read}' has run, "
                    f"fail and silently {'skip the step' if 'when' in field.context else 'store false'}",
                    field.path,
                    span=(member.span[0], segment_spans(field.text, member)[0][1]),
                    hint=f"add '{read}' to the step's 'after' list: after: [{after}]",
                )


def _no_output(flow: Flow, sid: str) -> bool:
    step = flow.step_map.get(sid)
    return step is None or step.kind == "gate"


# -- LG907 ------------------------------------------------------------------------------------


def unused_outputs(flow: Flow) -> Iterator[Finding]:
    """``set`` steps whose output nothing reads: dead computation.

    A set step's output is read by a ``${<id>.output...}`` reference (a data edge leaving it),
    a ``result.<id>`` in a ``when``/``set``/stage ``when`` expression, the flow's
    ``output.from`` or a carry's ``initial``/``on_revise`` source. A set step with an
    ``ensure`` is a check (its failure stops what comes after it), so it is left alone; so are
    the other kinds, whose results matter to the audit. Asked only of complete graphs.
    """
    unread = {s.id: s for s in flow.steps if s.kind == "set" and not s.ensure and s.id is not None
              and flow.step_map[s.id] is s}
    if not unread or not _discard_reads(flow, unread):
        return
    for sid, step in unread.items():
        yield Finding(
            "LG907",
            f"set step '{sid}' computes an output nothing reads (no step, expression, carry or "
            f"flow output refers to {sid}); remove it or use ${{{sid}.output}}",
            (*step.at, "id"),
            hint=f"read it with ${{{sid}.output}} in a template, result.{sid} in a 'when' or "
            f"'set', or from output.from; if it exists to check something, give it an 'ensure'",
        )


def _discard_reads(flow: Flow, unread: dict[str, Step]) -> bool:
    """Remove from ``unread`` every step something in ``flow`` reads; False when some read
    cannot be told (an expression that does not compile, a malformed source), so nothing is
    reported."""
    for known in flow_facts(flow):
        reads = known.output_reads()
        if reads is None:
            return False
        for name in reads:
            unread.pop(_step_named(flow, name), None)
        if not unread:
            return True
    sources = [] if flow.output is None else [flow.output.from_]
    for var in flow.carry.values():
        sources += [var.initial, *var.on_revise.values()]
    for text in sources:
        if not isinstance(text, str):
            continue
        template = scan(text)
        if template.errors:
            return False
        for ref in template.refs:
            if ref.kind == "step":
                unread.pop(_step_named(flow, ref.name or ""), None)
    return True


def _step_named(flow: Flow, name: str) -> str:
    """``name``, or the step it misspells: a misspelt read is reported as such (LG606 in an
    expression, LG403 in output.from or a carry source), and the step it meant is not unread."""
    if name in flow.step_map:
        return name
    return did_you_mean(name, list(flow.step_map)) or name


# -- LG905, LG906 -----------------------------------------------------------------------------


def unknown_agents(ctx: Context, flow: Flow) -> Iterator[Finding]:
    for at, agent in _agents(flow):
        if agent in ctx.agents:
            continue
        guess = did_you_mean(agent, ctx.agents)
        yield Finding(
            "LG905",
            f"agent '{agent}' is not configured{suffix(guess)}",
            at,
            replacement=guess,
            hint=f"configured agents: {', '.join(sorted(ctx.agents))}; map other names to "
            f"adapters in the project configuration",
        )


def _agents(flow: Flow) -> Iterator[tuple[YamlPath, str]]:
    for step in flow.steps:
        if step.agent is not None:
            yield (*step.at, "agent"), step.agent
        if step.fanout is not None:
            for stage in step.fanout.stages:
                if stage.agent is not None:
                    yield (*stage.at, "agent"), stage.agent


def unchecked_steps(flow: Flow) -> Iterator[Finding]:
    why = ("nothing checks what the agent returns, so any answer counts as done; declare an "
           "'out' contract or an 'ensure' postcondition")
    for step in flow.steps:
        if step.kind == "do" and step.out is None and not step.ensure:
            yield Finding("LG906", f"agent step '{step.id}' has neither 'out' nor 'ensure': {why}",
                          (*step.at, "do"), at="key", hint="add e.g. 'out: Result' and an 'ensure' expression")
        if step.fanout is not None:
            for stage in step.fanout.stages:
                if stage.out is None and not stage.ensure:
                    yield Finding("LG906", f"stage {stage.index} of fanout '{step.id}' has neither 'out' "
                                  f"nor 'ensure': {why}", (*stage.at, "do"), at="key",
                                  hint="add e.g. 'out: Result' or an 'ensure' expression to the stage")


# -- LG909 ------------------------------------------------------------------------------------

_AS_EXPRESSION = {"file_exists": "expr: \"file_exists('out/' + input.name + '.md')\"",
                  "file_contains": "expr: \"file_contains('notes.md', input.name)\""}


def literal_file_templates(flow: Flow) -> Iterator[Finding]:
    """A ``${...}`` in a ``file_exists`` path or a ``file_contains`` path or text: the language
    checks those as written (semantics §3.2, not scanned), so the ensure looks for a file
    literally named ``out/${input.name}.md`` and fails every time, saying only that it is false."""
    ensures = [ensure for step in flow.steps for ensure in step.ensure]
    ensures += [ensure for step in flow.steps if step.fanout is not None
                for stage in step.fanout.stages for ensure in stage.ensure]
    for ensure in ensures:
        for where, text in _file_fields(ensure):
            if text is not None and "${" in text:
                yield Finding("LG909", f"'{ensure.kind}' checks {text!r} as written: a ${{...}} in it is not filled "
                              "in, so the ensure looks for that very text", (*ensure.at, ensure.kind, *where),
                              hint=f"to check values, use an expression: {_AS_EXPRESSION[ensure.kind]}")


def _file_fields(ensure: Ensure) -> list[tuple[tuple[str, ...], str | None]]:
    """The texts of a file predicate ensure, each with its place under the predicate's key."""
    if ensure.kind == "file_exists":
        return [((), ensure.path)]
    if ensure.kind == "file_contains":
        return [(("path",), ensure.path), (("text",), ensure.text)]
    return []
