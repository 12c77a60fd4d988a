"""A validated spec compiled once for running: dependency indexes, expressions, templates, contracts.

Everything the state machine needs per transition is precomputed here and cached per spec digest,
so a transition never re-parses an expression, a template or a contract: each step knows its
dependencies (``after`` plus the step references of every scanned field), its dependents, the
steps that route to it, and its compiled ``when``/``set``/``ensure``/``until`` expressions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dsl import expr as exprlang
from ..dsl import refs as reflang
from ..dsl.contracts import ContractSet
from ..dsl.ir import Ensure, Flow, Spec, Stage, Step
from .flowneeds import uses_judged

DEFAULT_AGENT = "claude"


@dataclass(frozen=True, slots=True)
class CExpr:
    """A compiled expression; ``needs`` is the set of step ids a ``result`` map must hold
    (None: the whole map), or None when the expression does not read ``result`` at all."""

    source: str
    expression: Any
    needs: frozenset[str] | None
    reads_result: bool


@dataclass(frozen=True, slots=True)
class CEnsure:
    kind: str
    source: str
    expression: Any | None = None
    statement: str | None = None
    stakes: str = "default"


@dataclass(frozen=True, slots=True)
class CStage:
    stage: Stage
    index: int
    do: str
    template: Any
    when: CExpr | None
    ensures: tuple[CEnsure, ...]
    out: str | None
    agent: str
    attempts: int | None


@dataclass(slots=True)
class CStep:
    step: Step
    id: str
    index: int
    kind: str
    flow: str
    deps: tuple[str, ...] = ()
    dependents: list[str] = field(default_factory=list)
    fail_routers: list[str] = field(default_factory=list)
    gate_routers: list[str] = field(default_factory=list)
    when: CExpr | None = None
    template: Any = None
    set_exprs: tuple[tuple[str, CExpr], ...] = ()
    ensures: tuple[CEnsure, ...] = ()
    until: CExpr | None = None
    stages: tuple[CStage, ...] = ()
    agent: str = DEFAULT_AGENT
    budget: Mapping[str, float] = field(default_factory=dict)

    @property
    def max_attempts(self) -> int:
        return self.step.max_attempts

    @property
    def routed_only(self) -> bool:
        """True when some step routes here: the step waits until a route activates it."""
        return bool(self.fail_routers or self.gate_routers)


class CFlow:
    """One flow's compiled steps, in declaration order, with the dependency and route indexes."""

    def __init__(self, spec: Spec, flow: Flow) -> None:
        self.flow = flow
        self.name = flow.name
        self.steps: dict[str, CStep] = {}
        for step in flow.steps:
            if step.id is not None and step.kind is not None and step.id not in self.steps:
                self.steps[step.id] = _compile_step(flow, step)
        self.order = tuple(self.steps)
        self.total = len(self.order)
        for cstep in self.steps.values():
            for dep in cstep.deps:
                self.steps[dep].dependents.append(cstep.id)
            on_fail = cstep.step.on_fail
            if on_fail in self.steps:
                self.steps[on_fail].fail_routers.append(cstep.id)
            gate = cstep.step.gate
            if gate is not None:
                for target in {gate.on_approve, gate.on_kill}:
                    if target in self.steps:
                        self.steps[target].gate_routers.append(cstep.id)
        self.output_ref = _full_ref(flow.output.from_) if flow.output else None
        self.output_contract = flow.output.contract if flow.output else None
        self.budget = dict(flow.budget.limits()) if flow.budget else {}
        self.carry_sources = _carry_sources(flow)
        self._upstream: dict[str, frozenset[str]] = {}

    def upstream(self, step_id: str) -> frozenset[str]:
        """``step_id`` and every step before it, directly or through others: those it waits on
        (``after`` and references) and those that route to it (``on_fail``, a gate's approve or
        kill): the steps whose branch it is on."""
        found = self._upstream.get(step_id)
        if found is None:
            seen = {step_id}
            stack = [step_id]
            while stack:
                cstep = self.steps[stack.pop()]
                for before in (*cstep.deps, *cstep.fail_routers, *cstep.gate_routers):
                    if before not in seen:
                        seen.add(before)
                        stack.append(before)
            found = self._upstream[step_id] = frozenset(seen)
        return found

    def reset_closure(self, target: str) -> list[str]:
        """The target plus every step reachable from it by dependency or on_fail/approve/kill
        routes (the region a gate revise resets), in declaration order."""
        seen = {target}
        stack = [target]
        while stack:
            cstep = self.steps[stack.pop()]
            nexts = list(cstep.dependents)
            step = cstep.step
            if step.on_fail:
                nexts.append(step.on_fail)
            if step.gate is not None:
                nexts.extend(t for t in (step.gate.on_approve, step.gate.on_kill) if t)
            for nxt in nexts:
                if nxt in self.steps and nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return [sid for sid in self.order if sid in seen]


class CompiledSpec:
    """A spec ready to run: its flows compiled and its contracts resolved (cached by name)."""

    def __init__(self, spec: Spec, data: dict[str, Any], digest: str) -> None:
        self.spec = spec
        self.data = data
        self.digest = digest
        self.contracts = ContractSet.from_decls(spec.contracts)
        self.flows = {name: CFlow(spec, flow) for name, flow in spec.flows.items()}
        #: whether a transition may ask a judge (a ``judged`` ensure anywhere): a result reported
        #: to such a spec is parked first, so that a crash while the judge answers loses nothing
        self.judges = any(uses_judged(spec, name) for name in spec.flows)
        #: whether a fanout merges its items' worktrees in the process moving the run on (engine
        #: dispatch, ``isolation: worktree``): only such a spec's transitions watch for merges
        self.worktree_merges = any(step.fanout is not None and step.fanout.engine_worktrees
                                   for flow in spec.flows.values() for step in flow.steps)
        self._contracts: dict[str, Any] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        self._inputs: dict[str, Any] = {}
        #: (flow, step id, stage index or None) -> the spec-fixed parts of a dispatch entry
        self.entry_parts: dict[tuple[str, str, int | None], Any] = {}

    def contract(self, name: str) -> Any:
        found = self._contracts.get(name)
        if found is None:
            found = self._contracts[name] = self.contracts[name]
        return found

    def schema(self, name: str | None) -> dict[str, Any] | None:
        if name is None:
            return None
        found = self._schemas.get(name)
        if found is None:
            found = self._schemas[name] = self.contract(name).json_schema()
        return found

    def fields(self, name: str | None) -> dict[str, Any] | None:
        if name is None:
            return None
        decl = self.spec.contracts.get(name)
        return dict(decl.fields) if decl else None

    def input_contract(self, flow: str) -> Any:
        found = self._inputs.get(flow)
        if found is None:
            found = self._inputs[flow] = self.contracts.inline(self.spec.flows[flow].input)
        return found


_CACHE: dict[str, CompiledSpec] = {}


def compiled(spec: Spec, data: dict[str, Any], digest: str) -> CompiledSpec:
    """The compiled form of a spec, shared by every run of the same spec (keyed by digest)."""
    found = _CACHE.get(digest)
    if found is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        found = _CACHE[digest] = CompiledSpec(spec, data, digest)
    return found


# -- compiling one step ----------------------------------------------------------------------


def _compile_step(flow: Flow, step: Step) -> CStep:
    assert step.id is not None and step.kind is not None
    ids = flow.step_map
    cstep = CStep(step=step, id=step.id, index=step.index, kind=step.kind, flow=flow.name)
    deps: dict[str, None] = {a: None for a in step.after if a in ids and a != step.id}
    for text in _scanned_texts(step):
        for ref in reflang.scan(text).refs:
            if ref.kind == "step" and ref.name in ids and ref.name != step.id:
                deps[ref.name] = None
    cstep.deps = tuple(deps)
    cstep.when = _cexpr(step.when, ids) if step.when else None
    if step.kind == "do" and step.do is not None:
        cstep.template = reflang.scan(step.do)
    if step.kind == "set" and step.set is not None:
        cstep.set_exprs = tuple((k, _cexpr(str(v), ids)) for k, v in step.set.items())
    cstep.ensures = tuple(_censure(e) for e in step.ensure)
    if step.iterate is not None and step.iterate.until:
        cstep.until = _cexpr(step.iterate.until, ids)
    if step.fanout is not None:
        cstep.stages = tuple(_cstage(s, ids) for s in step.fanout.stages)
    cstep.agent = step.agent or DEFAULT_AGENT
    cstep.budget = dict(step.budget.limits()) if step.budget else {}
    return cstep


def _cstage(stage: Stage, ids: Mapping[str, Step]) -> CStage:
    text = stage.do or ""
    return CStage(
        stage=stage,
        index=stage.index,
        do=text,
        template=reflang.scan(text),
        when=_cexpr(stage.when, ids) if stage.when else None,
        ensures=tuple(_censure(e) for e in stage.ensure),
        out=stage.out,
        agent=stage.agent or DEFAULT_AGENT,
        attempts=stage.attempts,
    )


def _censure(ensure: Ensure) -> CEnsure:
    if ensure.kind == "judged":
        return CEnsure("judged", ensure.statement or "", statement=ensure.statement or "",
                       stakes=ensure.stakes)
    source = ensure.expression or ""
    return CEnsure(ensure.kind, source, expression=_compile_or_error(source))


def _cexpr(source: str, ids: Mapping[str, Step]) -> CExpr:
    expression = _compile_or_error(source)
    reads = "result" in getattr(expression, "identifiers", frozenset({"result"}))
    needs: frozenset[str] | None = None
    paths = getattr(expression, "member_paths", None)
    if reads and paths is not None:
        roots = [p for p in paths if p.root == "result"]
        if roots and all(p.path and isinstance(p.path[0], str) for p in roots):
            needs = frozenset(p.path[0] for p in roots)
    return CExpr(source, expression, needs, reads)


class _BrokenExpression:
    """Stands in for an expression that does not compile: evaluation raises its error again,
    so the engine fails closed (``when`` false, ensure failed) with the compiler's reason."""

    identifiers = frozenset({"result"})
    member_paths = None

    def __init__(self, error: Exception) -> None:
        self.error = error

    def evaluate(self, bindings: Mapping[str, Any], *, workspace: Any = None) -> Any:
        raise self.error

    def holds(self, bindings: Mapping[str, Any], *, workspace: Any = None) -> tuple[bool, str | None]:
        return False, str(self.error)


def _compile_or_error(source: str) -> Any:
    from ..errors import ExprError

    try:
        return exprlang.compile(source)
    except ExprError as exc:
        return _BrokenExpression(exc)


def _scanned_texts(step: Step) -> Iterator[str]:
    """Every field whose ``${...}`` step references are dependency edges."""
    if step.do:
        yield step.do
    if step.when:
        yield step.when
    for value in (step.set or {}).values():
        if isinstance(value, str):
            yield value
    if step.iterate is not None and step.iterate.until:
        yield step.iterate.until
    for ensure in step.ensure:
        if ensure.kind == "expr" and ensure.expr:
            yield ensure.expr
    if step.kind == "run":
        yield from _leaves(step.with_)
    if step.kind == "evaluate" and step.evaluate is not None and step.evaluate.in_:
        yield step.evaluate.in_
    if step.fanout is not None:
        if step.fanout.over:
            yield step.fanout.over
        for stage in step.fanout.stages:
            if stage.do:
                yield stage.do
            if stage.when:
                yield stage.when
            for ensure in stage.ensure:
                if ensure.kind == "expr" and ensure.expr:
                    yield ensure.expr


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


def _full_ref(text: str | None) -> Any:
    if not text:
        return None
    return reflang.scan(text).full


def _carry_sources(flow: Flow) -> dict[str, list[str]]:
    """Step id -> carry names whose ``initial`` reads that step (input-sourced under ``""``)."""
    out: dict[str, list[str]] = {}
    for name, var in flow.carry.items():
        ref = _full_ref(var.initial)
        if ref is None:
            continue
        source = ref.name if ref.kind == "step" else ""
        out.setdefault(source, []).append(name)
    return out
