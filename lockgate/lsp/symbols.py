"""Document symbols: contracts ▸ fields, flows ▸ steps (▸ fanout stages), from the IR.

Names and kinds come from the IR; line extents come from the outline, so a symbol covers its
whole block and its selection is the key (or the step's id).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range, YamlPath
from lockgate.dsl.ir import Flow, Step

from .documents import Analysis
from .positions import Encoding, LineIndex

_KINDS = {
    "contract": lsp.SymbolKind.Struct,
    "field": lsp.SymbolKind.Field,
    "flow": lsp.SymbolKind.Module,
    "step": lsp.SymbolKind.Function,
    "stage": lsp.SymbolKind.Method,
    "input": lsp.SymbolKind.Property,
    "carry": lsp.SymbolKind.Variable,
}


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str
    range: Range
    selection: Range
    detail: str = ""
    children: tuple[Symbol, ...] = field(default=())


def document_symbols(analysis: Analysis) -> list[Symbol]:
    """The outline of a spec, in document order."""
    spec = analysis.ir
    if spec is None:
        return []
    out: list[Symbol] = []
    for name, decl in spec.contracts.items():
        fields = [_symbol(analysis, (*decl.at, f), str(f), "field", str(t)) for f, t in decl.fields.items()]
        out.append(_symbol(analysis, decl.at, name, "contract", f"{len(decl.fields)} fields", fields))
    for flow in spec.flows.values():
        out.append(_flow_symbol(analysis, flow, entry=spec.entry == flow.name))
    return sorted((s for s in out if s is not None), key=lambda s: s.range.start)


def _flow_symbol(analysis: Analysis, flow: Flow, entry: bool) -> Symbol | None:
    children = [_step_symbol(analysis, step) for step in flow.steps]
    children += [_symbol(analysis, (*flow.at, "input", f), str(f), "input", str(t)) for f, t in flow.input.items()]
    children += [_symbol(analysis, c.at, c.name, "carry", "carry") for c in flow.carry.values()]
    detail = f"{'entry flow, ' if entry else ''}{len(flow.steps)} steps"
    return _symbol(analysis, flow.at, flow.name, "flow", detail, children)


def _step_symbol(analysis: Analysis, step: Step) -> Symbol | None:
    outline = analysis.outline
    line = outline.item_line(step.at)
    if line is None:
        return None
    end = outline.ends[line]
    full = Range(Position(line, 0), Position(end, len(outline.raw[end])))
    id_line = outline.line_of.get((*step.at, "id"))
    selection = _value_range(analysis, id_line) if id_line is not None else _line_range(analysis, line)
    stages = ()
    if step.fanout is not None:
        stages = tuple(
            s for s in (_stage_symbol(analysis, stage.at, stage.index, stage.agent) for stage in step.fanout.stages) if s
        )
    name = step.id or f"step {step.index + 1}"
    return Symbol(name, "step", full, _within(selection, full), _step_detail(step), stages)


def _stage_symbol(analysis: Analysis, at: YamlPath, index: int, agent: str | None) -> Symbol | None:
    line = analysis.outline.item_line(at)
    if line is None:
        return None
    end = analysis.outline.ends[line]
    full = Range(Position(line, 0), Position(end, len(analysis.outline.raw[end])))
    return Symbol(f"stage {index + 1}", "stage", full, _line_range(analysis, line), agent or "")


def _step_detail(step: Step) -> str:
    kind = step.kind or "incomplete"
    if step.kind == "do":
        parts = [kind, step.agent or "claude"]
        return " · ".join(parts) + (f" → {step.out}" if step.out else "")
    if step.kind == "run" and step.run:
        return f"run {step.run}"
    if step.kind == "set" and step.out:
        return f"set → {step.out}"
    return kind


def _symbol(
    analysis: Analysis, path: YamlPath, name: str, kind: str, detail: str = "", children=()
) -> Symbol | None:
    outline = analysis.outline
    line = outline.line_of.get(path)
    if line is None:
        return None
    end = outline.ends[line]
    full = Range(Position(line, 0), Position(end, len(outline.raw[end])))
    info = outline.lines[line]
    assert info is not None and info.key is not None
    key = Range(Position(line, info.key_col), Position(line, info.key_col + len(info.key)))
    return Symbol(name, kind, full, key, detail, tuple(c for c in children if c is not None))


def _value_range(analysis: Analysis, line: int) -> Range:
    info = analysis.outline.lines[line]
    raw = analysis.outline.raw[line]
    start = info.value_col if info is not None and info.value_col is not None else 0
    text = raw[start:].split(" #")[0].rstrip()
    return Range(Position(line, start), Position(line, start + len(text)))


def _line_range(analysis: Analysis, line: int) -> Range:
    raw = analysis.outline.raw[line]
    return Range(Position(line, len(raw) - len(raw.lstrip())), Position(line, len(raw)))


def _within(inner: Range, outer: Range) -> Range:
    return inner if outer.start <= inner.start and inner.end <= outer.end else outer


def to_lsp(symbols: list[Symbol], lines: LineIndex, encoding: Encoding) -> list[lsp.DocumentSymbol]:
    """The outline for the client, its ranges converted (and clamped) in ``lines``: the text
    they were found in, or the document's current text when they come from an earlier one."""
    return [
        lsp.DocumentSymbol(
            name=s.name or "?",
            kind=_KINDS[s.kind],
            range=lines.range_to_client(s.range, encoding),
            selection_range=lines.range_to_client(s.selection, encoding),
            detail=s.detail or None,
            children=to_lsp(list(s.children), lines, encoding) if s.children else None,
        )
        for s in symbols
    ]
