"""The symbol index of one analysis: every definition and use of a step id, contract, flow,
carry variable and flow input field, with its exact document range.

Uses are found in routing fields (``after``, ``on_fail``, gate routes), in ``${...}``
references (through :func:`lockgate.dsl.refs.scan`'s name spans), in expressions (``result.<id>``
in ``when``/``set``, ``input.<field>``, through the expression parser's spans) and in contract
types. Navigation, highlight, rename and hover all read this one table.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from lockgate.dsl.diagnostics import Position, Range, YamlPath
from lockgate.dsl.ir import Flow, Step
from lockgate.dsl.refs import scan

from . import fields as F
from .documents import Analysis
from .spans import SpanRanges, span_ranges

SymbolKey = tuple[str, ...]
#: where a text may use a YAML alias (``*bid``) or merge key (``<<:``)
_ALIAS = re.compile(r"(?:^|[\s,\[{:-])(?:\*[^\s,\[\]{}]|<<\s*:)")


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One mention of a symbol: ``span`` is the name's characters inside the string at ``path``
    (None: the whole key or value); ``at`` says whether the path's key or value holds it.
    ``alias``: the mention is a YAML alias standing for the name (``after: [*bid]``), at the
    alias's own range; navigation lists it, a rename leaves it alone (it edits the anchored
    value, which the alias then stands for)."""

    key: SymbolKey
    range: Range
    path: YamlPath
    definition: bool = False
    span: tuple[int, int] | None = None
    at: Literal["key", "value"] = "value"
    alias: bool = False

    @property
    def kind(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[-1]


class SymbolIndex:
    """Occurrences by symbol, and lookup by position."""

    def __init__(self, occurrences: list[Occurrence]) -> None:
        self.occurrences = _distinct(sorted(occurrences, key=lambda o: (o.range.start, o.range.end)))
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

    def renamable(self, key: SymbolKey) -> list[Occurrence]:
        """The mentions a rename edits: all but aliases (``*bid`` stands for the anchored
        value, which is edited where it is written)."""
        return [o for o in self.by_key.get(key, ()) if not o.alias]


def _distinct(occurrences: list[Occurrence]) -> list[Occurrence]:
    """Sorted occurrences with each (symbol, range) once, the definition kept: a node shared
    through a YAML alias (``after: *deps``, ``<<: *base``) is read at every place that uses it,
    but is one mention in the text, and a rename must edit it once (LSP forbids overlapping
    edits)."""
    out: list[Occurrence] = []
    group = 0  # where the run of occurrences with the current range starts in ``out``
    for occ in occurrences:
        if out and out[-1].range != occ.range:
            group = len(out)
        same = next((i for i in range(group, len(out)) if out[i].key == occ.key), None)
        if same is None:
            out.append(occ)
        elif occ.definition and not out[same].definition:
            out[same] = occ
    return out


def index_of(analysis: Analysis) -> SymbolIndex:
    """The (cached) symbol index of an analysis whose YAML parsed; empty otherwise. Steps whose
    text did not change since an earlier analysis reuse that analysis' entries."""
    return analysis.memo("index", _build)


def occurrence_at(analysis: Analysis, pos: Position) -> Occurrence | None:
    """The occurrence under the cursor, looking only at the step under the cursor and at the
    definitions (what hover needs, without indexing the whole document)."""
    if not analysis.parsed:
        return None
    built = analysis._memo.get("index")
    if built is not None:
        return built.at(pos)
    candidates = list(_header(analysis))
    source = analysis.source_map
    for flow, step in _steps_at(analysis, pos):
        rng = source.value_range(step.at)
        candidates.extend(_step_entries(analysis, flow, step, rng))
    return SymbolIndex(candidates).at(pos)


def _steps_at(analysis: Analysis, pos: Position) -> list[tuple[Flow, Step]]:
    """The step holding ``pos`` (or the character before it: occurrences include their end)."""
    spec = analysis.ir
    assert spec is not None  # callers check ``parsed``
    found: list[tuple[Flow, Step]] = []
    probes = [pos, Position(pos.line, pos.character - 1)] if pos.character > 0 else [pos]
    for probe in probes:
        located = analysis.source_map.path_at(probe)
        hit = F.step_at(spec, located[0]) if located is not None else None
        if hit is not None and all(hit[1] is not step for _, step in found):
            found.append(hit)
    return found


def _build(analysis: Analysis) -> SymbolIndex:
    if not analysis.parsed:
        return SymbolIndex([])
    out = list(_header(analysis))
    for flow, step, rng in _step_spans(analysis):
        out.extend(_step_entries(analysis, flow, step, rng))
    return SymbolIndex(out)


def _header(analysis: Analysis) -> list[Occurrence]:
    """Definitions of contracts, flows, inputs and carry variables, and the uses outside steps."""
    return analysis.memo("index.header", _build_header)


def _build_header(analysis: Analysis) -> list[Occurrence]:
    spec, spans = analysis.ir, _spans(analysis, analysis.text)
    assert spec is not None  # callers check ``parsed``
    out: list[Occurrence] = []
    for name in spec.contracts:
        out.append(Occurrence(("contract", name), spans.key_range(("contracts", name)), ("contracts", name), True, at="key"))
    for flow in spec.flows.values():
        out.append(Occurrence(("flow", flow.name), spans.key_range(flow.at), flow.at, True, at="key"))
        for field_name in flow.input:
            path = (*flow.at, "input", field_name)
            out.append(Occurrence(("input", flow.name, str(field_name)), spans.key_range(path), path, True, at="key"))
        for carry in flow.carry.values():
            out.append(Occurrence(("carry", carry.name), spans.key_range(carry.at), carry.at, True, at="key"))
    for field in F.walk_header(spec):
        out.extend(_field_occurrences(field, spans))
    return out


def _spans(analysis: Analysis, text: str) -> SpanRanges:
    """Span ranges for the fields of ``text`` (a step's, or the document's): the shared ones,
    or when ``text`` may hold a YAML alias, ones that know the aliases."""
    return _WithAliases(analysis) if _ALIAS.search(text) else span_ranges(analysis)


class _WithAliases(SpanRanges):
    """Span ranges that know which values are YAML aliases (``after: [*bid]``). An alias
    holds no text of its own: any span of it has the alias's range. (A value written after an
    anchor or tag, ``id: &bid build``, needs nothing here: its source range is its own text.)"""

    def __init__(self, analysis: Analysis) -> None:
        super().__init__(analysis)
        self._analysis = analysis
        self._aliases: dict[YamlPath, bool] = {}

    def is_alias(self, path: YamlPath) -> bool:
        found = self._aliases.get(path)
        if found is None:
            start = self._analysis.source_map.value_range(path).start
            found = self._aliases[path] = self._analysis.text.startswith("*", self._analysis.lines.offset(start))
        return found

    def range(self, path: YamlPath, value: str, start: int, end: int) -> Range:
        if self.is_alias(path):
            return self._analysis.source_map.value_range(path)
        return super().range(path, value, start, end)


def _step_spans(analysis: Analysis) -> list[tuple[Flow, Step, Range]]:
    """Every step with its range, in document order of flows."""
    return analysis.memo("index.steps", _build_step_spans)


def _build_step_spans(analysis: Analysis) -> list[tuple[Flow, Step, Range]]:
    source, spec = analysis.source_map, analysis.ir
    assert spec is not None  # callers check ``parsed``
    out = []
    for flow in spec.flows.values():
        for step in flow.steps:
            out.append((flow, step, source.value_range(step.at)))
    return out


# A step's occurrences depend only on its flow's name, its index, its text and the column it
# starts at, unless the step borrows content through a YAML alias or merge key (``_ALIAS``);
# those steps are not reused. Entries are kept per document (the last key part), so closing one
# drops them.
_STEP_CACHE: OrderedDict[tuple, tuple[int, list[Occurrence]]] = OrderedDict()
_STEP_CACHE_SIZE = 8192
_STEP_CACHE_LOCK = threading.Lock()  # indexes are built on the event loop and the features thread


def _step_entries(analysis: Analysis, flow: Flow, step: Step, rng: Range) -> list[Occurrence]:
    """The occurrences inside one step, reused from an earlier analysis when the step's text
    is the same (moved up or down when lines were added or removed above it).

    The key is the step's own text, not its lines: in a one-line document (JSON, flow style)
    every step's line is the whole document, and keying on it made indexing quadratic."""
    memo = analysis._memo.setdefault("index.entries", {})
    if step.at in memo:
        return memo[step.at]
    lines, first = analysis.lines, rng.start.line
    text = analysis.text[lines.offset(rng.start):lines.offset(rng.end)]
    key = (flow.name, step.at, text, rng.start.character, analysis.uri)
    reusable = not _ALIAS.search(text)
    cached = _cached(key) if reusable else None
    if cached is not None:
        then, found = cached
        if then != first:
            found = [_moved(o, first - then) for o in found]
            _remember(key, (first, found))
    else:
        spans = _spans(analysis, text)
        found = [o for field in F.walk_step(flow, step) for o in _field_occurrences(field, spans)]
        found += _call_inputs(step, spans)
        if reusable:
            _remember(key, (first, found))
    memo[step.at] = found
    return found


def forget(uri: str) -> None:
    """Drop the reusable step entries of a closed document. They are small (6 MB for a 1 MB
    spec), but were allocated among the analysis' objects and keep the allocator's pages of
    them: in-process, dropping them after indexing a 1 MB spec returned ~55 MB of resident
    memory."""
    with _STEP_CACHE_LOCK:
        for key in [key for key in _STEP_CACHE if key[-1] == uri]:
            del _STEP_CACHE[key]


def _cached(key: tuple) -> tuple[int, list[Occurrence]] | None:
    with _STEP_CACHE_LOCK:
        found = _STEP_CACHE.get(key)
        if found is not None:
            _STEP_CACHE.move_to_end(key)
        return found


def _remember(key: tuple, value: tuple[int, list[Occurrence]]) -> None:
    with _STEP_CACHE_LOCK:
        _STEP_CACHE[key] = value
        _STEP_CACHE.move_to_end(key)
        while len(_STEP_CACHE) > _STEP_CACHE_SIZE:
            _STEP_CACHE.popitem(last=False)


def _moved(occ: Occurrence, lines: int) -> Occurrence:
    start, end = occ.range.start, occ.range.end
    return replace(occ, range=Range(Position(start.line + lines, start.character), Position(end.line + lines, end.character)))


def _field_occurrences(field: F.Field, spans: SpanRanges) -> list[Occurrence]:
    """The mentions in one field. A field whose value is a YAML alias (``after: [*bid]``) is
    written at the anchored node, indexed where it stands: the alias is a mention (at its own
    range, see :func:`_aliased`) of the name it stands for whole."""
    # a gate key is written where it stands, whatever its value is
    if field.role != "gate_key" and isinstance(spans, _WithAliases) and spans.is_alias(field.path):
        return _aliased(field, spans)
    return _written(field, spans)


def _aliased(field: F.Field, spans: SpanRanges) -> list[Occurrence]:
    """The mention an alias field makes: the name its value is (a step id, a contract), at the
    alias. An alias standing for a text that mentions names (a template, an expression, a
    type around a contract) is no mention of its own: those names are indexed in the
    anchored text, and hover or definition at the alias could not say which one it means."""
    whole = (0, len(field.value))
    return [replace(o, span=None, alias=True) for o in _written(field, spans) if o.span == whole]


def _written(field: F.Field, spans: SpanRanges) -> list[Occurrence]:
    """The mentions of the names written in one field's value (or key)."""
    flow = field.flow.name if field.flow is not None else ""
    role = field.role
    if role in ("step", "step_id"):
        return [_whole(("step", flow, field.value), field, spans, definition=role == "step_id")]
    if role == "gate_key":
        return [Occurrence(("step", flow, field.value), spans.key_range(field.path), field.path, at="key")]
    if role == "contract":
        return [_whole(("contract", field.value), field, spans)]
    if role == "flow":
        return [_whole(("flow", field.value), field, spans)]
    if role == "type":
        return [_span(("contract", name), field, spans, span) for name, span in type_names(field.value)]
    if role == "template":
        return _template(field, flow, spans)
    return _expression(field, flow, spans)


def _call_inputs(step: Step, spans: SpanRanges) -> list[Occurrence]:
    """The keys of a subflow call's ``with`` mapping: uses of the called flow's input fields
    (renaming a field must rename them too, or the call passes an unknown input)."""
    if not isinstance(step.run, str) or not isinstance(step.with_, dict):
        return []
    keys = [key for key in step.with_ if isinstance(key, str)]
    return [Occurrence(("input", step.run, key), spans.key_range((*step.at, "with", key)), (*step.at, "with", key), at="key")
            for key in keys]


def _template(field: F.Field, flow: str, spans: SpanRanges) -> list[Occurrence]:
    out = []
    for ref in scan(field.value).refs:
        if ref.kind == "step" and ref.name and ref.name_span:
            out.append(_span(("step", flow, ref.name), field, spans, ref.name_span))
        elif ref.kind == "carry" and ref.name and ref.name_span:
            out.append(_span(("carry", ref.name), field, spans, ref.name_span))
        elif ref.kind == "input" and ref.path and ref.segment_spans and isinstance(ref.path[0], str):
            start, end = ref.segment_spans[0]
            start += field.value[start:end].startswith(".")
            out.append(_span(("input", flow, ref.path[0]), field, spans, (start, end)))
    return out


def _expression(field: F.Field, flow: str, spans: SpanRanges) -> list[Occurrence]:
    out = []
    for root, name, span in member_roots(field.value):
        if root == "input":
            out.append(_span(("input", flow, name), field, spans, span))
        elif root == "result" and field.binds_step_outputs:
            out.append(_span(("step", flow, name), field, spans, span))
    # `${...}` inside expressions is accepted syntactically and orders steps
    return out + _template(field, flow, spans)


@lru_cache(maxsize=4096)
def type_names(type_text: str) -> tuple[tuple[str, tuple[int, int]], ...]:
    """The contract a field type names, with its span, as the type grammar reads it (none when
    the type does not parse). Enum members are strings even when spelled like a contract:
    ``Draft|Review`` names no contract."""
    from lockgate.dsl.types import ArrayOf, Named, OptionalOf, parse_type
    from lockgate.errors import ContractError

    try:
        node = parse_type(type_text)
    except ContractError:
        return ()
    while isinstance(node, (OptionalOf, ArrayOf)):
        node = node.inner if isinstance(node, OptionalOf) else node.element
    return ((node.name, node.span),) if isinstance(node, Named) else ()


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


def _whole(key: SymbolKey, field: F.Field, spans: SpanRanges, *, definition: bool = False) -> Occurrence:
    end = len(field.value)
    return Occurrence(key, spans.range(field.path, field.value, 0, end), field.path, definition, (0, end))


def _span(key: SymbolKey, field: F.Field, spans: SpanRanges, span: tuple[int, int]) -> Occurrence:
    return Occurrence(key, spans.range(field.path, field.value, *span), field.path, span=span)
