"""Inlay hints: the contract type a ``${...}`` reference resolves to, shown after it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range
from lockgate.dsl.ir import Spec
from lockgate.dsl.refs import scan

from . import fields as F
from . import shapes
from .documents import Analysis
from .positions import Encoding
from .spans import span_ranges


@dataclass(frozen=True, slots=True)
class Hint:
    position: Position
    label: str


def inlay_hints(analysis: Analysis, rng: Range) -> list[Hint]:
    """Type hints for the references inside ``rng``."""
    spec, source = analysis.ir, analysis.source_map
    if spec is None or source is None or not analysis.parsed:
        return []
    ranges = span_ranges(analysis)
    out = []
    for field in _fields_near(spec, source, rng):
        if field.role not in ("template", "expression"):
            continue
        for ref in scan(field.value).refs:
            if ref.kind in ("item", "prev"):
                continue
            end = ranges.range(field.path, field.value, ref.span[1] - 1, ref.span[1]).end
            if not rng.start <= end <= rng.end:
                continue
            t = shapes.ref_type(spec, field.flow, ref)
            if t is not None:
                out.append(Hint(end, f": {t.describe()}"))
    out.sort(key=lambda h: h.position)
    return out


def _fields_near(spec: Spec, source: Any, rng: Range) -> Iterator[F.Field]:
    """The fields that may hold a position of ``rng``: the editor asks for the lines on screen,
    so the steps entirely above or below them are skipped rather than scanned (on a 3 MB spec,
    converting every reference's position cost 0.5 s and 170 MB per request)."""
    yield from F.walk_header(spec)
    for flow in spec.flows.values():
        for step in flow.steps:
            at = source.value_range(step.at)
            if not (at.end < rng.start or at.start > rng.end):
                yield from F.walk_step(flow, step)


def to_lsp(hints: list[Hint], analysis: Analysis, encoding: Encoding) -> list[lsp.InlayHint]:
    return [
        lsp.InlayHint(position=analysis.lines.to_client(h.position, encoding), label=h.label,
                      kind=lsp.InlayHintKind.Type, padding_left=False)
        for h in hints
    ]
