"""Semantic tokens for what TextMate cannot see: inside ``${...}`` references (step ids,
bindings, fields) and inside expressions (bindings, members, builtins, operators, literals),
plus contract names in ``out`` and in contract types.

While the YAML is broken mid-edit the tokens come from the last analysis that parsed, kept on
the lines that are unchanged since (see :func:`carried`), as the outline is."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Range
from lockgate.dsl.refs import scan

from . import fields as F
from .documents import Analysis, Text
from .index import parse_expression
from .positions import Encoding, LineMap
from .spans import span_ranges

TOKEN_TYPES = ["namespace", "variable", "property", "function", "operator", "number", "string", "keyword", "type"]
TOKEN_MODIFIERS = ["defaultLibrary", "readonly"]
LEGEND = lsp.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)


@dataclass(frozen=True, slots=True)
class Token:
    range: Range
    type: str
    modifiers: tuple[str, ...] = ()


def data(analysis: Analysis, encoding: Encoding) -> list[int]:
    """The encoded tokens of the whole document (cached per analysis and encoding: the integers
    take about a sixth of the memory of the :class:`Token` objects they come from)."""
    return analysis.memo(f"semantic_tokens:{encoding}", lambda a: encode(tokens(a), a, encoding))


def carried(base: Analysis, now: Text, encoding: Encoding) -> list[int]:
    """The encoded tokens of ``base`` (an analysis of an earlier text) on the lines of ``now``
    that are unchanged since, moved by the lines inserted or removed above them; tokens on
    changed lines are left out. An unchanged line has the same text, so its tokens' columns
    hold in any encoding."""
    lines = LineMap(base.doc.raw_lines, now.raw_lines)
    old = data(base, encoding)
    out: list[int] = []
    line = char = prev_line = prev_char = 0
    for i in range(0, len(old), 5):
        delta_line, delta_char, length, kind, mods = old[i:i + 5]
        line += delta_line
        char = char + delta_char if delta_line == 0 else delta_char
        new = lines.to_new(line)
        if new is None:
            continue
        out += [new - prev_line, char - prev_char if new == prev_line else char, length, kind, mods]
        prev_line, prev_char = new, char
    return out


def tokens(analysis: Analysis) -> list[Token]:
    """Tokens of the whole document, in document order."""
    spec, source = analysis.ir, analysis.source_map
    if spec is None or source is None or not analysis.parsed:
        return []
    out: list[Token] = []
    ranges = span_ranges(analysis)
    for field in F.walk(spec):
        spans: list[tuple[int, int, str, tuple[str, ...]]] = []
        if field.role in ("template", "expression"):
            spans += _ref_spans(field.value)
        if field.role == "expression":
            spans += _expr_spans(field)
        if field.role == "contract":
            spans.append((0, len(field.value), "type", ()))
        for start, end, kind, mods in spans:
            if end > start:
                rng = ranges.range(field.path, field.value, start, end)
                if rng.start.line == rng.end.line:
                    out.append(Token(rng, kind, mods))
    out.sort(key=_order)
    return out


def _order(token: Token) -> tuple[int, int, int]:
    """Document order (tokens span one line each): plain integers sort much faster than the
    dataclass positions."""
    start, end = token.range.start, token.range.end
    return start.line, start.character, end.character


def _ref_spans(text: str) -> list[tuple[int, int, str, tuple[str, ...]]]:
    spans = []
    for ref in scan(text).refs:
        spans.append((ref.span[0], ref.span[0] + 2, "operator", ()))
        if ref.name_span is not None:
            spans.append((*ref.name_span, "namespace" if ref.kind == "step" else "variable", ()))
        elif ref.kind in ("input", "item", "prev"):
            spans.append((ref.span[0] + 2, ref.span[0] + 2 + len(ref.kind), "variable", ("readonly",)))
        for (s, e), part in zip(ref.segment_spans, ref.path):
            if isinstance(part, str):
                s += text[s:e].startswith(".")
                spans.append((s, e, "property", ()))
        spans.append((ref.span[1] - 1, ref.span[1], "operator", ()))
    return spans


def _expr_spans(field: F.Field) -> list[tuple[int, int, str, tuple[str, ...]]]:
    from lockgate.dsl.expr.nodes import (
        Binary,
        FunctionCall,
        Identifier,
        Literal,
        Member,
        Unary,
        walk,
    )

    tree = parse_expression(field.value)
    if tree is None:
        return []
    spans = []
    for node in walk(tree):
        if isinstance(node, Identifier):
            spans.append((*node.span, "variable", ("readonly",)))
        elif isinstance(node, Member):
            spans.append((*node.name_span, "property", ()))
        elif isinstance(node, FunctionCall):
            spans.append((*node.name_span, "function", ("defaultLibrary",)))
        elif isinstance(node, Binary):
            spans.append((*node.op_span, "operator", ()))
        elif isinstance(node, Unary):
            spans.append((node.span[0], node.span[0] + len(node.op), "operator", ()))
        elif isinstance(node, Literal):
            kind = "string" if isinstance(node.value, str) else "keyword" if node.value is None or isinstance(node.value, bool) else "number"
            spans.append((*node.span, kind, ()))
    return spans


def encode(items: list[Token], analysis: Analysis, encoding: Encoding, rng: Range | None = None) -> list[int]:
    """LSP's relative integer encoding of ``items`` (only those inside ``rng`` when given)."""
    data: list[int] = []
    prev_line = prev_char = 0
    units = analysis.lines.client_units
    for token in items:
        if rng is not None and (token.range.end < rng.start or token.range.start > rng.end):
            continue
        line, char = units(token.range.start, encoding)
        end_line, end_char = units(token.range.end, encoding)
        length = end_char - char if end_line == line else 0
        if length <= 0:
            continue
        delta_char = char - prev_char if line == prev_line else char
        if data and line == prev_line and delta_char < 0:
            continue  # overlapping token: keep the first
        mods = sum(1 << TOKEN_MODIFIERS.index(m) for m in token.modifiers)
        data += [line - prev_line, delta_char, length, TOKEN_TYPES.index(token.type), mods]
        prev_line, prev_char = line, char
    return data
