"""What every check module shares: the spec, the configured agents and derived lookups."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...errors import ContractError
from ..diagnostics import Finding
from ..graph import ScannedField, flow_facts
from ..ir import CarryVar, Flow, Spec, Step
from ..stepfacts import StepFacts

BUILTIN_AGENTS: frozenset[str] = frozenset({"claude", "codex"})


@dataclass
class Context:
    """The input of one :func:`lockgate.dsl.checks.run_checks` call.

    Cached derivations live here so that each module computes nothing twice; the context is
    thrown away after the call.
    """

    spec: Spec
    agents: frozenset[str] = field(default=BUILTIN_AGENTS)
    _complete: dict[str, bool] = field(default_factory=dict, repr=False)
    _usable: dict[int, tuple[object, bool]] = field(default_factory=dict, repr=False)
    _env: dict[str, int | None] = field(default_factory=dict, repr=False)
    _facts: dict[int, tuple[Step, tuple]] = field(default_factory=dict, repr=False)
    #: (expression text, what its ``result`` is: a type, or the flow's step-output map) -> its
    #: certain type errors and the kind of its value (``typecheck.Typed``), for every expression field
    type_errors: dict[tuple[str, object], Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, spec: Spec, agents: Collection[str] | None) -> Context:
        return cls(spec, BUILTIN_AGENTS | frozenset(agents or ()))

    @property
    def entry(self) -> Flow | None:
        return self.spec.entry_flow

    def is_entry(self, flow: Flow) -> bool:
        return self.entry is flow

    def restricted(self, flow: Flow) -> bool:
        """Whether ``flow`` is known not to be the entry flow (the entry exists elsewhere)."""
        return self.entry is not None and self.entry is not flow

    def carry_vars(self, flow: Flow) -> Mapping[str, CarryVar]:
        """The carry variables ``${name}`` can read in ``flow``: its own declarations. Only the
        entry flow may declare any, and they are not visible inside a subflow."""
        return flow.carry

    def usable(self, root) -> bool:
        """Whether a typing root (a contract name or a flow's input mapping) is free of
        contract problems, so paths under it can be checked without cascading."""
        if isinstance(root, str):
            return self.contracts.get(root) is not None
        if isinstance(root, Mapping):
            # inputs are few and live as long as this context: remember each one's answer
            known = self._usable.get(id(root))
            if known is not None and known[0] is root:
                return known[1]
            try:
                self.contracts.inline(root)
                answer = True
            except ContractError:
                answer = False
            self._usable[id(root)] = (root, answer)
            return answer
        return True

    def graph_complete(self, flow: Flow) -> bool:
        """Whether the dependency graph of ``flow`` is the one its author meant: every
        ``after`` entry and reference parses and names a step other than its own, carry
        references name declared variables, and there is no cycle. Ordering rules (ancestors,
        reset closures, reachability) are only sound on such a graph; otherwise the broken
        edge is the real problem, and it is reported where it is written."""
        cached = self._complete.get(flow.name)
        if cached is None:
            cached = self._complete[flow.name] = _complete(flow, self.carry_vars(flow))
        return cached

    def per_step(self, rule: str, flow: Flow, fields_of: Callable[[StepFacts], tuple[ScannedField, ...]],
                 per_field: Callable[[Context, Flow, Step, ScannedField], Iterable[Finding]],
                 ) -> Iterator[Finding]:
        """``per_field(ctx, flow, step, field)`` for each of the ``fields_of`` (some of its scanned
        fields) of each step of ``flow``, remembered per step across runs by content.

        For the per-field rules (references, expressions), whose findings depend only on the
        fields, a few facts of their step and the flow's typing environment (:meth:`env_id`):
        step ids and what each one's output is typed against, the flow input, the carry names
        and the contracts. A warm re-check of an edited spec recomputes only changed fields.
        The answer is kept with the step's facts too, so an unchanged Step object (the loader
        reuses them) finds it without hashing its fields again.
        """
        env = self.env_id(flow)
        key = (rule, env)
        for step, known in zip(flow.steps, flow_facts(flow)):
            fields = fields_of(known)
            if not fields:
                continue
            found = known.found.get(key) if env is not None else None
            if found is None:
                found = self._remembered(rule, env, flow, known, fields, per_field)
            yield from found

    def _remembered(self, rule: str, env: int | None, flow: Flow, known: StepFacts,
                    fields: tuple[ScannedField, ...], per_field: Callable[..., Iterable[Finding]]) -> tuple[Finding, ...]:
        """One step's findings from the content-keyed memo (computed on a miss), then kept with
        its facts; computed afresh when part of the content cannot be hashed."""

        def compute() -> tuple[Finding, ...]:
            return tuple(found for field in fields for found in per_field(self, flow, known.step, field))

        found = None if env is None else self._by_content(rule, env, known.step, fields, compute)
        if found is None:
            return compute()
        remembered = known.found
        if len(remembered) >= _PER_STEP:
            remembered.clear()
        remembered[(rule, env)] = found
        return found

    def _by_content(self, rule: str, env: int, step: Step, field_key: Hashable,
                    compute: Callable[[], tuple[Finding, ...]]) -> tuple[Finding, ...] | None:
        """The findings from the content-keyed memo, computed on a miss; None when the step
        holds an unhashable value."""
        known = self._facts.get(id(step))
        if known is None or known[0] is not step:  # per run: the spec holds its steps alive
            known = self._facts[id(step)] = (step, _step_facts(step))
        key = (rule, env, field_key, known[1])
        try:
            found = _FIELD_MEMO.get(key)
        except TypeError:  # an unhashable value in the step
            return None
        if found is None:
            found = _FIELD_MEMO.put(key, compute())
        return found

    def env_id(self, flow: Flow) -> int | None:
        """A small id for the typing environment of ``flow`` (equal content, equal id), or
        None when part of it cannot be hashed."""
        if flow.name not in self._env:
            self._env[flow.name] = _ENVS.intern(_environment(self, flow))
        return self._env[flow.name]

    @cached_property
    def contracts(self):
        """The spec's :class:`lockgate.dsl.contracts.ContractSet`."""
        from ..contracts import ContractSet

        return ContractSet.from_decls(self.spec.contracts)


def _complete(flow: Flow, carry: Mapping[str, CarryVar]) -> bool:
    from ..graph import cycles, references_complete

    complete, carry_read = references_complete(flow)
    return complete and all(name in carry for name in carry_read) and not cycles(flow)


# -- memoisation --------------------------------------------------------------------------------


class _Lru:
    """A bounded mapping that forgets the least recently used entries; safe to share between
    threads (the language server loads on a worker thread while others may load too)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.RLock()

    def get(self, key: Hashable) -> Any:
        with self.lock:
            found = self.data.get(key)
            if found is not None:
                self.data.move_to_end(key)
            return found

    def put(self, key: Hashable, value: Any) -> Any:
        with self.lock:
            self.data[key] = value
            if len(self.data) > self.size:
                self.data.popitem(last=False)
            return value

    def clear(self) -> None:
        with self.lock:
            self.data.clear()


class _Interned:
    """Equal environments get the same small id (bounded, like the memo it keys)."""

    def __init__(self, size: int) -> None:
        self.ids = _Lru(size)
        self.next = 0

    def intern(self, env: tuple | None) -> int | None:
        if env is None:
            return None
        with self.ids.lock:  # one id per environment, never two for one or one for two
            try:
                found = self.ids.get(env)
            except TypeError:
                return None
            if found is None:
                self.next += 1
                found = self.ids.put(env, self.next)
            return found

    def clear(self) -> None:
        self.ids.clear()


_FIELD_MEMO = _Lru(60_000)
_PER_STEP = 8  # (rule, environment) answers kept with one step's facts
_ENVS = _Interned(64)


def clear_memo() -> None:
    """Forget every memoised finding (benchmarks measure cold checks with this)."""
    _FIELD_MEMO.clear()
    _ENVS.clear()


def _step_facts(step: Step) -> tuple:
    """What the per-field rules read of a field's own step besides the field itself."""
    fan = step.fanout
    stages = tuple((st.index, st.out, st.at) for st in fan.stages) if fan is not None else None
    return (step.id, step.kind, step.out, step.at, fan.over if fan is not None else None, stages)


def _environment(ctx: Context, flow: Flow) -> tuple | None:
    """Everything the per-field rules read beyond their field and step, as content."""
    steps = []
    for step in flow.steps:
        fan = step.fanout
        last = fan.stages[-1] if fan is not None and fan.stages else None
        callee = ctx.spec.flows.get(step.run) if isinstance(step.run, str) else None
        called = None
        if callee is not None:
            called = (callee.name, callee.output.contract if callee.output is not None else None,
                      callee.output is not None)
        steps.append((step.id, step.kind, step.out, step.run, called,
                      None if last is None else (last.index, last.out, last.at)))
    contracts = tuple((name, decl.name, tuple(decl.fields.items()) if isinstance(decl.fields, Mapping) else None)
                      for name, decl in ctx.spec.contracts.items())
    entry = ctx.entry.name if ctx.entry is not None else None
    env = (flow.name, flow.at, tuple(flow.input.items()), tuple(steps), tuple(ctx.carry_vars(flow)), contracts,
           entry, ctx.spec.entry)
    try:
        hash(env)
    except TypeError:
        return None
    return env
