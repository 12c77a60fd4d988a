"""What the graph and the checks derive from one step alone, remembered per Step object.

The loader hands back the very same :class:`~lockgate.dsl.ir.Step` object for a step whose YAML
did not change (its step memo), and steps are immutable, so whatever is computed from a step
alone can be kept with it: a warm load after an edit recomputes it only for the edited step.

The memo is keyed by object identity and holds the step itself, so an id is never reused while
its entry exists; it is bounded (least recently used entries go first) and cleared by
:func:`lockgate.dsl.loader.clear_caches`. Entries only ever go from absent to complete, so two
threads loading at once at worst compute the same facts twice.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable

from ..errors import ExprError
from . import graph  # a module object: graph imports this module too
from .expr import compile as compile_expr
from .ir import Step
from .refs import scan

_SIZE = 8_192  # as many steps as the loader's step memo keeps
_MEMO: OrderedDict[int, StepFacts] = OrderedDict()
_SIGNATURES: dict[Hashable, int] = {}
_SIGNATURES_SIZE = 65_536
_NEXT = itertools.count(1)


class StepFacts:
    """The scanned fields of one step (all, the expressions among them, and those of them
    reading ``result.<step>``) and the graph facts read from them.

    ``signature`` is a small int naming the step's graph content (id, place, ``after``,
    references, routes): equal ints mean equal content, so a flow's graph can be looked up by
    the signatures of its steps. ``found`` holds findings of per-step rules, keyed by rule and
    typing environment (see :meth:`lockgate.dsl.checks.context.Context.per_step`).
    """

    __slots__ = (
        "_output_reads",
        "after_edges",
        "carry_reads",
        "data_refs",
        "expressions",
        "fields",
        "found",
        "ref_errors",
        "signature",
        "step",
        "step_map_reads",
    )

    def __init__(self, step: Step) -> None:
        self.step = step
        self.fields = tuple(graph.scanned_fields(step))
        self.expressions = tuple(f for f in self.fields if f.is_expression)
        # the expression fields where ``result`` maps step ids to their outputs
        self.step_map_reads = tuple(f for f in self.expressions if f.context in ("when", "set", "stage_when"))
        self.after_edges = tuple((dep, (*step.at, "after", i)) for i, dep in enumerate(step.after))
        data_refs = []
        carry_reads = []
        errors = False
        for field in self.fields:
            template = scan(field.text)
            errors = errors or bool(template.errors)
            for ref in template.refs:
                if ref.kind == "step":
                    data_refs.append((ref.name, field.path, ref.span))
                elif ref.kind == "carry":
                    carry_reads.append(ref.name or "")
        self.data_refs = tuple(data_refs)
        self.ref_errors = errors
        self.carry_reads = frozenset(carry_reads)
        self.signature = _signature(step, self)
        self.found: dict[Hashable, tuple] = {}
        self._output_reads: frozenset[str] | None | object = _UNSET

    def output_reads(self) -> frozenset[str] | None:
        """The step ids whose outputs this step reads, other than its own: its
        ``${<id>.output...}`` references and the ``result.<id>`` of its ``when``/``set``/stage
        ``when`` expressions (which create no edge). None when that cannot be told: such an
        expression does not compile, or reads ``result`` other than by a step id.
        Computed on first use (only lints ask), then kept."""
        if self._output_reads is _UNSET:
            found = _result_reads(self.step_map_reads)
            if found is not None:
                found = frozenset({*found, *(name for name, _, _ in self.data_refs)} - {self.step.id})
            self._output_reads = found
        return self._output_reads  # type: ignore[return-value]


_UNSET = object()


def _result_reads(fields: tuple[graph.ScannedField, ...]) -> set[str] | None:
    """The step ids ``fields`` read as ``result.<id>``; None when one does not compile or
    reads ``result`` some other way (as a whole: it may read any step)."""
    names: set[str] = set()
    for field in fields:
        try:
            paths = compile_expr(field.text).member_paths
        except ExprError:
            return None
        for member in paths:
            if member.root != "result":
                continue
            if not member.path or not isinstance(member.path[0], str):
                return None
            names.add(member.path[0])
    return names


def facts(step: Step) -> StepFacts:
    """The :class:`StepFacts` of ``step``, computed once per Step object while remembered."""
    key = id(step)
    found = _MEMO.get(key)
    if found is not None and found.step is step:
        try:
            _MEMO.move_to_end(key)
        except KeyError:  # another thread evicted it meanwhile; it is still valid here
            pass
        return found
    found = _MEMO[key] = StepFacts(step)
    while len(_MEMO) > _SIZE:
        try:
            _MEMO.popitem(last=False)
        except KeyError:
            break
    return found


def clear() -> None:
    """Forget every step's facts (the loader's ``clear_caches``)."""
    _MEMO.clear()
    _SIGNATURES.clear()


def _signature(step: Step, facts: StepFacts) -> int:
    """An int shared by steps with equal graph content (a fresh one when it cannot be hashed).
    Ints are never reused, so forgetting the table only costs misses."""
    gate = step.gate
    content = (step.id, step.at, step.after, step.on_fail, step.kind, facts.data_refs, facts.ref_errors,
               facts.carry_reads, None if gate is None else (gate.on_approve, gate.on_kill, gate.on_revise, gate.at))
    try:
        found = _SIGNATURES.get(content)
    except TypeError:
        return next(_NEXT)
    if found is None:
        if len(_SIGNATURES) >= _SIGNATURES_SIZE:
            _SIGNATURES.clear()
        found = _SIGNATURES[content] = next(_NEXT)
    return found
