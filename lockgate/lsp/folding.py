"""Folding ranges: every key or list item whose subtree spans several lines, from the outline
(so folding works on half-typed text too), plus runs of comment lines."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp

from .context import Outline

MAX_RANGES = 5000  # editors lag on huge outlines; yaml-language-server caps at the same number


@dataclass(frozen=True, slots=True)
class Fold:
    start: int
    end: int
    kind: str = "region"  # or "comment"


def folding_ranges(outline: Outline) -> list[Fold]:
    """Line ranges to fold, in document order."""
    folds = [
        Fold(number, outline.ends[number])
        for number, line in enumerate(outline.lines)
        if line is not None and outline.ends[number] > number
    ]
    folds.extend(_comment_runs(outline.raw))
    folds.sort(key=lambda f: (f.start, -f.end))
    return folds[:MAX_RANGES]


def _comment_runs(raw: list[str]) -> list[Fold]:
    runs, start = [], None
    for number, text in enumerate([*raw, ""]):
        if text.lstrip().startswith("#"):
            start = number if start is None else start
            continue
        if start is not None and number - 1 > start:
            runs.append(Fold(start, number - 1, "comment"))
        start = None
    return runs


def to_lsp(folds: list[Fold], caps: lsp.ClientCapabilities | None = None) -> list[lsp.FoldingRange]:
    folding = caps.text_document.folding_range if caps and caps.text_document else None
    limit = folding.range_limit if folding and folding.range_limit else MAX_RANGES
    return [
        lsp.FoldingRange(
            start_line=f.start,
            end_line=f.end,
            kind=lsp.FoldingRangeKind.Comment if f.kind == "comment" else lsp.FoldingRangeKind.Region,
        )
        for f in folds[:limit]
    ]
