"""Inlay hints: the contract type a ``${...}`` reference resolves to, shown after it."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range
from lockgate.dsl.refs import scan

from . import fields as F
from . import shapes
from .documents import Analysis
from .positions import Encoding


@dataclass(frozen=True, slots=True)
class Hint:
    position: Position
    label: str


def inlay_hints(analysis: Analysis, rng: Range) -> list[Hint]:
    """Type hints for the references inside ``rng``."""
    spec, source = analysis.ir, analysis.source_map
    if spec is None or source is None or not analysis.parsed:
        return []
    out = []
    for field in F.walk(spec):
        if field.role not in ("template", "expression"):
            continue
        for ref in scan(field.value).refs:
            if ref.kind in ("item", "prev"):
                continue
            end = source.span_range(field.path, ref.span[1] - 1, ref.span[1]).end
            if not rng.start <= end <= rng.end:
                continue
            t = shapes.ref_type(spec, field.flow, ref)
            if t is not None:
                out.append(Hint(end, f": {t.describe()}"))
    out.sort(key=lambda h: h.position)
    return out


def to_lsp(hints: list[Hint], analysis: Analysis, encoding: Encoding) -> list[lsp.InlayHint]:
    return [
        lsp.InlayHint(position=analysis.lines.to_client(h.position, encoding), label=h.label,
                      kind=lsp.InlayHintKind.Type, padding_left=False)
        for h in hints
    ]
