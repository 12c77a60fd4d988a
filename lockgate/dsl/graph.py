"""The step graph of a flow: dependencies, routes, generations and the revise reset closure.

A flow's steps form one directed graph (Stratum §1.5):

- ``after`` entries and ``${<step>.output...}`` references in any scanned field are
  **dependency** edges, source -> step (kinds ``after`` and ``data``);
- ``on_fail`` and non-null gate ``on_approve``/``on_kill`` are **routing** edges, step -> target
  (kinds ``on_fail``, ``approve``, ``kill``);
- ``on_revise`` is the one sanctioned back-edge (kind ``revise``): drawn, never part of the DAG.

List order is never a dependency, and ``when``/``set`` reading ``result.<id>`` or carry
references create no edges. The engine asks these helpers on every advance, so the analysis of
each :class:`~lockgate.dsl.ir.Flow` object is computed once and cached (flows are immutable).
Everything here tolerates invalid flows: unknown ids are ignored, and an edge that would close a
cycle is kept out of the DAG (the validator reports it as ``LG504``).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import networkx as nx

from . import stepfacts  # a module object: stepfacts imports this module too
from .diagnostics import YamlPath
from .ir import Flow, Spec, Step
from .refs import Ref, scan

if TYPE_CHECKING:
    from .stepfacts import StepFacts

T = TypeVar("T")
EdgeKind = Literal["data", "after", "on_fail", "approve", "kill", "revise"]
DEPENDENCY_KINDS: frozenset[str] = frozenset({"data", "after"})
ROUTE_KINDS: frozenset[str] = frozenset({"on_fail", "approve", "kill"})

DEFAULT_AGENT = "claude"

# -- scanned fields (§3.2) -------------------------------------------------------------------

FieldContext = Literal[
    "do", "when", "set", "until", "ensure", "with", "evaluate_in", "over", "stage_do", "stage_when",
    "stage_ensure",
]
EXPRESSION_CONTEXTS: frozenset[str] = frozenset(
    {"when", "set", "until", "ensure", "stage_when", "stage_ensure"}
)


@dataclass(frozen=True, slots=True)
class ScannedField:
    """A string in a step whose ``${...}`` references are scanned.

    ``context`` says which field it is (it decides the allowed reference kinds and, for
    expression fields, the bindings); ``stage`` is the fanout stage index for stage fields.
    """

    path: YamlPath
    text: str
    context: FieldContext
    stage: int | None = None

    @property
    def is_expression(self) -> bool:
        return self.context in EXPRESSION_CONTEXTS

    @property
    def in_stage(self) -> bool:
        return self.stage is not None


def scanned_fields(step: Step) -> Iterator[ScannedField]:
    """Every scanned string of ``step`` in the validator's order (§3.2, §4 item 12.5).

    ``with`` is scanned only on ``run`` steps and ``evaluate.in`` only on ``evaluate`` steps;
    ``output.from`` and carry values are not step fields and are checked separately.
    """
    at = step.at
    if step.when is not None:
        yield ScannedField((*at, "when"), step.when, "when")
    if step.do is not None:
        yield ScannedField((*at, "do"), step.do, "do")
    if step.set is not None:
        for key, value in step.set.items():
            if isinstance(value, str):
                yield ScannedField((*at, "set", key), value, "set")
    if step.iterate is not None and step.iterate.until is not None:
        yield ScannedField((*step.iterate.at, "until"), step.iterate.until, "until")
    for ensure in step.ensure:
        if ensure.kind == "expr" and ensure.expr is not None:
            yield ScannedField((*ensure.at, "expr"), ensure.expr, "ensure")
    if step.kind == "run" and step.with_ is not None:
        yield from _with_leaves(step.with_, (*at, "with"))
    if step.kind == "evaluate" and step.evaluate is not None and step.evaluate.in_ is not None:
        yield ScannedField((*step.evaluate.at, "in"), step.evaluate.in_, "evaluate_in")
    if step.fanout is not None:
        fan = step.fanout
        if fan.over is not None:
            yield ScannedField((*fan.at, "over"), fan.over, "over")
        for stage in fan.stages:
            if stage.when is not None:
                yield ScannedField((*stage.at, "when"), stage.when, "stage_when", stage.index)
            if stage.do is not None:
                yield ScannedField((*stage.at, "do"), stage.do, "stage_do", stage.index)
            for ensure in stage.ensure:
                if ensure.kind == "expr" and ensure.expr is not None:
                    yield ScannedField((*ensure.at, "expr"), ensure.expr, "stage_ensure", stage.index)


def _with_leaves(value: Any, at: YamlPath) -> Iterator[ScannedField]:
    if isinstance(value, str):
        yield ScannedField(at, value, "with")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                yield from _with_leaves(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _with_leaves(item, (*at, i))


def step_refs(step: Step, flow: Flow | None = None) -> Iterator[tuple[ScannedField, Ref]]:
    """Every well-formed ``${...}`` reference in ``step``'s scanned fields, with its field.
    Pass the step's ``flow`` to reuse its remembered fields (:func:`step_fields`)."""
    for field in scanned_fields(step) if flow is None else step_fields(flow, step):
        for ref in scan(field.text).refs:
            yield field, ref


def step_fields(flow: Flow, step: Step) -> tuple[ScannedField, ...]:
    """:func:`scanned_fields` of a step (of ``flow``), computed once per Step object."""
    return stepfacts.facts(step).fields


# -- edges -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge of the flow graph; ``path`` is where it is written (for diagnostics)."""

    source: str
    target: str
    kind: EdgeKind
    path: YamlPath
    span: tuple[int, int] | None = None


def flow_edges(flow: Flow) -> tuple[Edge, ...]:
    """All edges of ``flow`` between known steps, self-edges included.

    Order: first the dependency edges, step by step in list order (each step's ``after``, then
    its references in scanned-field order), then the routes the same way (``on_fail``, gate
    ``on_approve``/``on_kill``, ``on_revise``). Dependencies are the structure of a flow and
    routes the likelier slip, so a cycle is blamed on the route that closes it. Duplicate ids:
    the first step with an id owns it.
    """
    return _analysis(flow).edges


RawEdge = tuple[str, str, EdgeKind, YamlPath, "tuple[int, int] | None"]


def _collect_edges(flow: Flow, known_facts: tuple[StepFacts, ...]) -> list[RawEdge]:
    """The edges of :func:`flow_edges` as plain tuples (Edge objects are made on demand)."""
    known = flow.step_map
    owners = [(s, f) for s, f in zip(flow.steps, known_facts) if s.id is not None and known.get(s.id) is s]
    edges: list[RawEdge] = []
    add = edges.append
    for step, found in owners:
        sid = step.id
        for dep, path in found.after_edges:
            if dep in known:
                add((dep, sid, "after", path, None))
        for name, path, span in found.data_refs:
            if name in known:
                add((name, sid, "data", path, span))
    for step, _ in owners:
        sid = step.id
        if step.on_fail in known:
            add((sid, step.on_fail, "on_fail", (*step.at, "on_fail"), None))
        if step.gate is not None:
            gate = step.gate
            for kind, target in (("approve", gate.on_approve), ("kill", gate.on_kill)):
                if target in known:
                    add((sid, target, kind, (*gate.at, f"on_{kind}"), None))
            if gate.on_revise in known:
                add((sid, gate.on_revise, "revise", (*gate.at, "on_revise"), None))
    return edges


def _complete(flow: Flow, known_facts: tuple[StepFacts, ...]) -> tuple[bool, frozenset[str]]:
    """Whether every ``after`` entry and reference of ``flow`` parses and names a step other
    than its own, and the carry names its references read."""
    known = flow.step_map
    carry: set[str] = set()
    for step, found in zip(flow.steps, known_facts):
        if any(dep not in known or dep == step.id for dep in step.after) or found.ref_errors:
            return False, frozenset()
        if any(name not in known or name == step.id for name, _, _ in found.data_refs):
            return False, frozenset()
        carry |= found.carry_reads
    return True, frozenset(carry)


@dataclass(frozen=True, slots=True)
class Route:
    """A routing edge: ``source`` sends control to ``target`` on ``kind``."""

    source: str
    kind: EdgeKind
    target: str


class _Analysis:
    """Everything derived from one flow's edges.

    Built from the :mod:`~lockgate.dsl.stepfacts` of the flow's steps and shared by every Flow
    object whose steps have the same graph content (see :func:`_analysis`), so re-validating
    a flow after an edit that left its graph alone (an expression's text, an agent) reuses it.

    In the usual, acyclic case the DAG is every non-revise edge, layered by Kahn's algorithm,
    and transitive questions are answered from bitsets (one Python int per step, bit ``i`` for
    the step at position ``i`` of a topological order), computed on first use. Only when the
    edges hold a cycle is the DAG grown edge by edge in validator order, so that each closing
    edge is found and named (:func:`cycles`).
    """

    def __init__(self, flow: Flow, known_facts: tuple[StepFacts, ...]) -> None:
        self.raw_edges = _collect_edges(flow, known_facts)
        self.derived: dict[str, Any] = {}  # graph_memo's answers
        self._edges: tuple[Edge, ...] | None = None
        self.complete = _complete(flow, known_facts)
        ids = list(flow.step_map)
        self.cycle_edges: list[tuple[Edge, list[str]]] = []
        self.deps: dict[str, set[str]] = {sid: set() for sid in ids}
        self.dependents: dict[str, set[str]] = {sid: set() for sid in ids}
        self.forward: dict[str, set[str]] = {sid: set() for sid in ids}
        routes: dict[str, list[Route]] = {}
        for source, target, kind, _, _ in self.raw_edges:
            if kind == "revise" or source == target:
                continue
            self.forward[source].add(target)
            if kind == "data" or kind == "after":
                self.deps[target].add(source)
                self.dependents[source].add(target)
            else:
                routes.setdefault(target, []).append(Route(source, kind, target))
        self.routes = {target: tuple(rs) for target, rs in routes.items()}
        generations = _generations(ids, self.forward)
        self.acyclic = generations is not None
        if generations is None:
            drawn = [e for e in self.edges if e.kind != "revise" and e.source != e.target]
            generations = self._grow_dag(ids, drawn)
        self.generations = generations
        self._order: tuple[dict[str, int], list[str]] | None = None
        self._up: dict[str, int] | None = None
        self._down: dict[str, int] | None = None
        self._closures: dict[str, frozenset[str]] = {}
        self._upstream: dict[str, frozenset[str]] = {}

    @property
    def edges(self) -> tuple[Edge, ...]:
        if self._edges is None:
            self._edges = tuple(Edge(*raw) for raw in self.raw_edges)
        return self._edges

    def _grow_dag(self, ids: list[str], edges: list[Edge]) -> list[frozenset[str]]:
        """The DAG of the edges taken in order, leaving out each edge that closes a cycle."""
        dag = nx.DiGraph()
        dag.add_nodes_from(ids)
        for edge in edges:
            if dag.has_edge(edge.source, edge.target):
                continue
            if nx.has_path(dag, edge.target, edge.source):
                cycle = nx.shortest_path(dag, edge.target, edge.source)
                self.cycle_edges.append((edge, [edge.source, *cycle]))
                continue
            dag.add_edge(edge.source, edge.target)
        return [frozenset(g) for g in nx.topological_generations(dag)]

    def order(self) -> tuple[dict[str, int], list[str]]:
        """(bit of each step, step at each bit): a topological order (acyclic flows only)."""
        if self._order is None:
            order = [sid for generation in self.generations for sid in sorted(generation)]
            self._order = ({sid: 1 << i for i, sid in enumerate(order)}, order)
        return self._order

    def up(self) -> dict[str, int]:
        """Each step's transitive dependencies as a bitset (acyclic flows only)."""
        if self._up is None:
            bit, order = self.order()
            up: dict[str, int] = {}
            for sid in order:
                mask = 0
                for dep in self.deps[sid]:
                    mask |= up[dep] | bit[dep]
                up[sid] = mask
            self._up = up
        return self._up

    def down(self) -> dict[str, int]:
        """What each step reaches by dependencies and routes, itself included, as a bitset."""
        if self._down is None:
            bit, order = self.order()
            down: dict[str, int] = {}
            for sid in reversed(order):
                mask = bit[sid]
                for nxt in self.forward[sid]:
                    mask |= down[nxt]
                down[sid] = mask
            self._down = down
        return self._down


def _generations(ids: list[str], forward: Mapping[str, set[str]]) -> list[frozenset[str]] | None:
    """Kahn's layers of the graph, or None when it has a cycle."""
    indegree = dict.fromkeys(ids, 0)
    for targets in forward.values():
        for target in targets:
            indegree[target] += 1
    layer = [sid for sid, n in indegree.items() if n == 0]
    layers: list[frozenset[str]] = []
    placed = 0
    while layer:
        layers.append(frozenset(layer))
        placed += len(layer)
        nxt = []
        for sid in layer:
            for target in forward[sid]:
                indegree[target] -= 1
                if indegree[target] == 0:
                    nxt.append(target)
        layer = nxt
    return layers if placed == len(ids) else None


def _members(mask: int, order: list[str]) -> frozenset[str]:
    out = []
    while mask:
        low = mask & -mask
        out.append(order[low.bit_length() - 1])
        mask ^= low
    return frozenset(out)


_CACHE: dict[int, tuple[_Analysis, tuple[StepFacts, ...]]] = {}
_SHARED: OrderedDict[tuple, _Analysis] = OrderedDict()
_SHARED_SIZE = 8  # a 2,000-step flow's analysis takes about 3.5 MB


def _analysis(flow: Flow) -> _Analysis:
    """The analysis of ``flow``: remembered per Flow object (the engine asks on every
    advance), and shared by flows whose steps have equal graph content (their signatures)."""
    return _of(flow)[0]


def flow_facts(flow: Flow) -> tuple[StepFacts, ...]:
    """The :class:`~lockgate.dsl.stepfacts.StepFacts` of each step of ``flow``, in order
    (looked up once per Flow object)."""
    return _of(flow)[1]


def _of(flow: Flow) -> tuple[_Analysis, tuple[StepFacts, ...]]:
    key = id(flow)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = _shared(flow)
        weakref.finalize(flow, _CACHE.pop, key, None)
    return found


def _shared(flow: Flow) -> tuple[_Analysis, tuple[StepFacts, ...]]:
    known_facts = tuple(stepfacts.facts(step) for step in flow.steps)
    key = (flow.name, *(found.signature for found in known_facts))
    shared = _SHARED.get(key)
    if shared is None:
        shared = _SHARED[key] = _Analysis(flow, known_facts)
        while len(_SHARED) > _SHARED_SIZE:
            try:
                _SHARED.popitem(last=False)
            except KeyError:  # emptied by another thread
                break
    return shared, known_facts


def graph_memo(flow: Flow, name: str, compute: Callable[[Flow], T]) -> T:
    """``compute(flow)``, remembered with the analysis ``flow`` shares: only for answers that
    read nothing of the flow but its name, its graph and what step signatures hold (step ids,
    places, kinds, ``after`` lists, references, ``on_fail`` and gate routes)."""
    derived = _analysis(flow).derived
    found = derived.get(name, _MISSING)
    if found is _MISSING:
        found = derived[name] = compute(flow)
    return found


_MISSING = object()


def clear_cache() -> None:
    """Forget the shared analyses (the loader's ``clear_caches``); per-flow ones live as long
    as their flow."""
    _SHARED.clear()


# -- queries ---------------------------------------------------------------------------------


def self_edges(flow: Flow) -> list[Edge]:
    """The edges of :func:`flow_edges` whose source is their target, in the same order."""
    return [Edge(*raw) for raw in _analysis(flow).raw_edges if raw[0] == raw[1]]


def references_complete(flow: Flow) -> tuple[bool, frozenset[str]]:
    """(whether every ``after`` entry and ``${...}`` in ``flow``'s steps parses and names a
    step other than its own, the carry names those references read); for the validator's
    question of whether the flow's graph is the one its author meant."""
    return _analysis(flow).complete


def dependencies(flow: Flow, step_id: str) -> frozenset[str]:
    """The steps ``step_id`` directly depends on: its ``after`` list plus every step it
    references with ``${<id>.output...}`` in any scanned field (expression fields included).
    Unknown ids and self-references are left out."""
    return frozenset(_analysis(flow).deps.get(step_id, ()))


def dependents(flow: Flow, step_id: str) -> frozenset[str]:
    """The steps that directly depend on ``step_id`` (the inverse of :func:`dependencies`)."""
    return frozenset(_analysis(flow).dependents.get(step_id, ()))


def upstream(flow: Flow, step_id: str) -> frozenset[str]:
    """Every step ``step_id`` transitively depends on (dependency edges only, not routes)."""
    analysis = _analysis(flow)
    cached = analysis._upstream.get(step_id)
    if cached is None:
        if analysis.acyclic and step_id in analysis.deps:
            cached = _members(analysis.up()[step_id], analysis.order()[1])
        else:
            cached = frozenset(_reach(step_id, analysis.deps)) - {step_id}
        analysis._upstream[step_id] = cached
    return cached


def depends_on(flow: Flow, step_id: str, other: str) -> bool:
    """Whether ``step_id`` transitively depends on ``other`` (so ``other`` finishes first)."""
    analysis = _analysis(flow)
    if analysis.acyclic and step_id in analysis.deps and other in analysis.deps:
        return bool(analysis.up()[step_id] & analysis.order()[0][other])
    return other in upstream(flow, step_id)


def routing_targets(flow: Flow) -> Mapping[str, tuple[Route, ...]]:
    """Steps that are targets of ``on_fail``, ``on_approve`` or ``on_kill``, each with the
    routes leading to it. Such steps run only when routed (``on_revise`` is not a route)."""
    return _analysis(flow).routes


def reset_closure(flow: Flow, target: str) -> frozenset[str]:
    """The steps a gate revision to ``target`` resets (§6.7): ``target`` plus every step
    reachable from it by dependency edges or ``on_fail``/``on_approve``/``on_kill`` routes,
    to a fixpoint. Empty when ``target`` is not a step of the flow."""
    analysis = _analysis(flow)
    if target not in analysis.forward:
        return frozenset()
    cached = analysis._closures.get(target)
    if cached is None:
        if analysis.acyclic:
            cached = _members(analysis.down()[target], analysis.order()[1])
        else:
            cached = frozenset(_reach(target, analysis.forward))
        analysis._closures[target] = cached
    return cached


def reaches(flow: Flow, source: str, target: str) -> bool:
    """Whether ``target`` is reachable from ``source`` in the routing graph of §1.5
    (dependency and route edges, never ``on_revise``)."""
    analysis = _analysis(flow)
    if analysis.acyclic and source in analysis.forward and target in analysis.forward:
        return bool(analysis.down()[source] & analysis.order()[0][target])
    return target in reset_closure(flow, source)


def topological_generations(flow: Flow) -> list[frozenset[str]]:
    """Steps in layers: each layer depends (or is routed) only on earlier layers.

    Built over dependency and route edges, without ``on_revise`` and without any edge that
    would close a cycle, so it is defined for invalid flows too."""
    return list(_analysis(flow).generations)


def cycles(flow: Flow) -> list[tuple[Edge, list[str]]]:
    """Each edge that closes a cycle, with the cycle it closes as a list of step ids that
    starts and ends at the edge's source (``[a, b, a]``). Edges are tried in validator order,
    and a closing edge is left out of the DAG, so each independent cycle is named once."""
    return list(_analysis(flow).cycle_edges)


def _reach(start: str, adjacency: Mapping[str, set[str]]) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for nxt in adjacency.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


# -- the drawable graph ----------------------------------------------------------------------


def step_agent(step: Step) -> str | None:
    """The agent that runs a ``do`` step (default ``claude``); None for other kinds."""
    if step.kind == "do":
        return step.agent or DEFAULT_AGENT
    return None


def flow_graph(spec: Spec, flow_name: str) -> nx.DiGraph:
    """A networkx DiGraph of ``flow_name``: one node per step, one edge per connected pair.

    Node attributes: ``kind`` (do/set/gate/fanout/run/evaluate or None), ``agent`` (for ``do`` steps;
    for a fanout, the stages' agents joined by ``,``), ``label`` (the step id, plus the called
    flow for ``run``), ``index`` (position in the list). Edge attributes: ``kind`` (one of
    data, after, on_fail, approve, kill, revise; when a pair has several, the first of that
    order) and ``kinds`` (all of them). Unlike :func:`topological_generations` this draws
    every edge, including a cycle's closing edge and the ``revise`` back-edge.
    Raises KeyError when the spec has no such flow.
    """
    flow = spec.flows[flow_name]
    graph = nx.DiGraph(name=flow_name)
    for sid, step in flow.step_map.items():
        graph.add_node(sid, kind=step.kind, agent=_node_agent(step), label=_label(step), index=step.index)
    order = ("data", "after", "on_fail", "approve", "kill", "revise")
    for edge in flow_edges(flow):
        if edge.source == edge.target:
            continue
        if graph.has_edge(edge.source, edge.target):
            attrs = graph.edges[edge.source, edge.target]
            kinds = sorted({*attrs["kinds"], edge.kind}, key=order.index)
            attrs.update(kinds=tuple(kinds), kind=kinds[0])
        else:
            graph.add_edge(edge.source, edge.target, kind=edge.kind, kinds=(edge.kind,))
    return graph


def _node_agent(step: Step) -> str | None:
    if step.kind == "fanout" and step.fanout is not None:
        agents = dict.fromkeys(stage.agent or DEFAULT_AGENT for stage in step.fanout.stages)
        return ",".join(agents) or None
    return step_agent(step)


def _label(step: Step) -> str:
    label = step.id or f"step {step.index}"
    if step.kind == "run" and step.run:
        return f"{label} -> {step.run}"
    return label
