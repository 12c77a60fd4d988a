"""Go to definition, find references and document highlight, over the symbol index."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range

from .documents import Analysis
from .index import index_of
from .positions import Encoding


@dataclass(frozen=True, slots=True)
class Highlight:
    range: Range
    write: bool


def definition(analysis: Analysis, pos: Position) -> list[Range]:
    """Where the symbol under the cursor is declared (empty when nothing is there)."""
    index = index_of(analysis)
    occ = index.at(pos)
    if occ is None:
        return []
    target = index.definition(occ.key)
    return [target.range] if target is not None else []


def references(analysis: Analysis, pos: Position, *, include_declaration: bool = True) -> list[Range]:
    """Every mention of the symbol under the cursor, in document order."""
    index = index_of(analysis)
    occ = index.at(pos)
    if occ is None:
        return []
    return [o.range for o in index.references(occ.key, include_definition=include_declaration)]


def highlights(analysis: Analysis, pos: Position) -> list[Highlight]:
    """The symbol's mentions, the declaration marked as a write."""
    index = index_of(analysis)
    occ = index.at(pos)
    if occ is None:
        return []
    return [Highlight(o.range, o.definition) for o in index.references(occ.key)]


def locations(uri: str, ranges: list[Range], analysis: Analysis, encoding: Encoding) -> list[lsp.Location]:
    return [lsp.Location(uri=uri, range=analysis.lines.range_to_client(r, encoding)) for r in ranges]


def highlights_to_lsp(items: list[Highlight], analysis: Analysis, encoding: Encoding) -> list[lsp.DocumentHighlight]:
    return [
        lsp.DocumentHighlight(
            range=analysis.lines.range_to_client(h.range, encoding),
            kind=lsp.DocumentHighlightKind.Write if h.write else lsp.DocumentHighlightKind.Read,
        )
        for h in items
    ]
