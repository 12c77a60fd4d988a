"""What every check module shares: the spec, the configured agents and derived lookups."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ...errors import ContractError
from ..ir import CarryVar, Flow, Spec

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
        """The carry variables ``${name}`` can read in ``flow``: the root's store, which is the
        entry flow's declarations (the flow's own when there is no valid entry)."""
        root = self.entry if self.entry is not None else flow
        return root.carry

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

    @cached_property
    def contracts(self):
        """The spec's :class:`lockgate.dsl.contracts.ContractSet`."""
        from ..contracts import ContractSet

        return ContractSet.from_decls(self.spec.contracts)


def _complete(flow: Flow, carry: Mapping[str, CarryVar]) -> bool:
    from ..graph import cycles, scanned_fields
    from ..refs import scan

    known = flow.step_map
    for step in flow.steps:
        if any(dep not in known or dep == step.id for dep in step.after):
            return False
        for field_ in scanned_fields(step):
            template = scan(field_.text)
            if template.errors:
                return False
            for ref in template.refs:
                if ref.kind == "step" and (ref.name not in known or ref.name == step.id):
                    return False
                if ref.kind == "carry" and ref.name not in carry:
                    return False
    return not cycles(flow)
