"""The symbol index of one analysis: every definition and use of a step id, contract, flow,
carry variable and flow input field, with its exact document range.

Uses are found in routing fields (``after``, ``on_fail``, gate routes), in ``${...}``
references (through :func:`lockgate.dsl.refs.scan`'s name spans), in expressions (``result.<id>``
in ``when``/``set``, ``input.<field>``, through the expression parser's spans) and in contract
types. Navigation, highlight, rename and hover all read this one table.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from lockgate.dsl.diagnostics import Position, Range, YamlPath
from lockgate.dsl.refs import scan

from . import fields as F
from .documents import Analysis

SymbolKey = tuple[str, ...]
_TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One mention of a symbol: ``span`` is the name's characters inside the string at ``path``
    (None: the whole key or value); ``at`` says whether the path's key or value holds it."""

    key: SymbolKey
    range: Range
    path: YamlPath
    definition: bool = False
    span: tuple[int, int] | None = None
    at: Literal["key", "value"] = "value"

    @property
    def kind(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[-1]


class SymbolIndex:
    """Occurrences by symbol, and lookup by position."""

    def __init__(self, occurrences: list[Occurrence]) -> None:
        self.occurrences = sorted(occurrences, key=lambda o: (o.range.start, o.range.end))
        self.by_key: dict[SymbolKey, list[Occurrence]] = defaultdict(list)
        for occ in self.occurrences:
            self.by_key[occ.key].append(occ)

    def at(self, pos: Position) -> Occurrence | None:
        """The occurrence under the cursor (the innermost when several touch it)."""
        hits = [o for o in self.occurrences if o.range.start <= pos <= o.range.end]
        if not hits:
            return None
        return min(hits, key=lambda o: (o.range.end.line - o.range.start.line, o.range.end.character - o.range.start.character))

    def definition(self, key: SymbolKey) -> Occurrence | None:
        return next((o for o in self.by_key.get(key, ()) if o.definition), None)

    def references(self, key: SymbolKey, *, include_definition: bool = True) -> list[Occurrence]:
        return [o for o in self.by_key.get(key, ()) if include_definition or not o.definition]


def index_of(analysis: Analysis) -> SymbolIndex:
    """The (cached) symbol index of an analysis whose YAML parsed; empty otherwise."""
    return analysis.memo("index", _build)


def _build(analysis: Analysis) -> SymbolIndex:
    spec, source = analysis.ir, analysis.source_map
    if spec is None or source is None or not analysis.parsed:
        return SymbolIndex([])
    out: list[Occurrence] = []
    for name in spec.contracts:
        out.append(Occurrence(("contract", name), source.key_range(("contracts", name)), ("contracts", name), True, at="key"))
    for flow in spec.flows.values():
        out.append(Occurrence(("flow", flow.name), source.key_range(flow.at), flow.at, True, at="key"))
        for field_name in flow.input:
            path = (*flow.at, "input", field_name)
            out.append(Occurrence(("input", flow.name, str(field_name)), source.key_range(path), path, True, at="key"))
        for carry in flow.carry.values():
            out.append(Occurrence(("carry", carry.name), source.key_range(carry.at), carry.at, True, at="key"))
    for field in F.walk(spec):
        out.extend(_field_occurrences(field, source))
    return SymbolIndex(out)


def _field_occurrences(field: F.Field, source: Any) -> list[Occurrence]:
    flow = field.flow.name if field.flow is not None else ""
    role = field.role
    if role in ("step", "step_id"):
        return [_whole(("step", flow, field.value), field, source, definition=role == "step_id")]
    if role == "gate_key":
        return [Occurrence(("step", flow, field.value), source.key_range(field.path), field.path, at="key")]
    if role == "contract":
        return [_whole(("contract", field.value), field, source)]
    if role == "flow":
        return [_whole(("flow", field.value), field, source)]
    if role == "type":
        return [_span(("contract", m.group()), field, source, m.span()) for m in _TYPE_NAME.finditer(field.value)]
    if role == "template":
        return _template(field, flow, source)
    return _expression(field, flow, source)


def _template(field: F.Field, flow: str, source: Any) -> list[Occurrence]:
    out = []
    for ref in scan(field.value).refs:
        if ref.kind == "step" and ref.name and ref.name_span:
            out.append(_span(("step", flow, ref.name), field, source, ref.name_span))
        elif ref.kind == "carry" and ref.name and ref.name_span:
            out.append(_span(("carry", ref.name), field, source, ref.name_span))
        elif ref.kind == "input" and ref.path and ref.segment_spans and isinstance(ref.path[0], str):
            start, end = ref.segment_spans[0]
            start += field.value[start:end].startswith(".")
            out.append(_span(("input", flow, ref.path[0]), field, source, (start, end)))
    return out


def _expression(field: F.Field, flow: str, source: Any) -> list[Occurrence]:
    out = []
    for root, name, span in member_roots(field.value):
        if root == "input":
            out.append(_span(("input", flow, name), field, source, span))
        elif root == "result" and field.binds_step_outputs:
            out.append(_span(("step", flow, name), field, source, span))
    # `${...}` inside expressions is accepted syntactically and orders steps
    return out + _template(field, flow, source)


@lru_cache(maxsize=4096)
def member_roots(expression: str) -> tuple[tuple[str, str, tuple[int, int]], ...]:
    """``(binding, member, member span)`` for every ``binding.member`` in an expression
    (empty when it does not parse)."""
    from lockgate.dsl.expr.nodes import Group, Identifier, Member, walk

    tree = parse_expression(expression)
    if tree is None:
        return ()
    found = []
    for node in walk(tree):
        if isinstance(node, Member):
            target = node.target
            while isinstance(target, Group):
                target = target.inner
            if isinstance(target, Identifier):
                found.append((target.name, node.name, node.name_span))
    return tuple(found)


@lru_cache(maxsize=4096)
def parse_expression(expression: str):
    """The expression's AST, or None when it does not parse (the diagnostics say why)."""
    from lockgate.dsl.expr.parser import parse
    from lockgate.errors import ExprError

    try:
        return parse(expression)
    except ExprError:
        return None


def _whole(key: SymbolKey, field: F.Field, source: Any, *, definition: bool = False) -> Occurrence:
    return Occurrence(key, source.span_range(field.path, 0, len(field.value)), field.path, definition, (0, len(field.value)))


def _span(key: SymbolKey, field: F.Field, source: Any, span: tuple[int, int]) -> Occurrence:
    return Occurrence(key, source.span_range(field.path, *span), field.path, span=span)
