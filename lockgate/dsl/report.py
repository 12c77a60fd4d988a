"""Render diagnostics for people and for machines (text with carets, JSON, GitHub annotations).

Pure functions from diagnostics and the document text to strings; the CLI and the notebook
only print what these return.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .diagnostics import Diagnostic, Severity

_LABEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "info",
    Severity.HINT: "hint",
}


#: Control characters shown as their Unicode pictures (one character each, so carets stay
#: aligned): a raw escape sequence in a spec must not recolour the terminal reading the report.
_VISIBLE = {code: 0x2400 + code for code in range(0x20)} | {0x7F: 0x2421} | {code: 0xFFFD for code in range(0x80, 0xA0)}

#: Longest excerpt printed of a source line: a longer line is shown as a window around the range.
EXCERPT_WIDTH = 120
_LEAD = 40  # characters kept before the range in such a window


def caret_excerpt(text: str | Sequence[str], diag: Diagnostic, *, line_offset: int = 0) -> str:
    """The source line of ``diag`` with a caret line under its range.

    ``text`` is the document or its lines (split once by a caller reporting many diagnostics).
    A range spanning lines is underlined to the end of its first line; a line longer than
    :data:`EXCERPT_WIDTH` is cut to a window around the range, marked with ``…``.
    ``line_offset`` shifts the printed line numbers (a notebook cell printed with its own
    numbering).
    """
    lines = (text.splitlines() if isinstance(text, str) else text) or [""]
    start, end = diag.range.start, diag.range.end
    if start.line >= len(lines):
        return ""
    source = lines[start.line].replace("\t", " ").translate(_VISIBLE)
    column = min(start.character, len(source))
    stop = min(end.character if end.line == start.line else len(source), len(source))
    left = max(0, column - _LEAD) if len(source) > EXCERPT_WIDTH else 0
    shown = source[left:left + EXCERPT_WIDTH]
    before, after = ("…" if left else ""), ("…" if left + EXCERPT_WIDTH < len(source) else "")
    width = max(1, min(stop, left + EXCERPT_WIDTH) - column)
    number = f"{start.line + 1 + line_offset}"
    gutter = " " * len(number)
    caret = " " * (len(before) + column - left) + "^" * width
    return f"{number} | {before}{shown}{after}\n{gutter} | {caret}"


def format_text(name: str, text: str, diagnostics: Sequence[Diagnostic], *, line_offset: int = 0) -> str:
    """Human-readable report: location, severity, code, message, excerpt, hint and fix."""
    blocks = []
    lines = text.splitlines()
    for diag in diagnostics:
        pos = diag.range.start
        head = f"{name}:{pos.line + 1 + line_offset}:{pos.character + 1}: {_LABEL[diag.severity]} {diag.code}: {diag.message}"
        parts = [head]
        excerpt = caret_excerpt(lines, diag, line_offset=line_offset)
        if excerpt:
            parts.append(excerpt)
        if diag.hint:
            parts.append(f"  hint: {diag.hint}")
        if diag.fix:
            parts.append(f"  fix: {diag.fix.title}")
        blocks.append("\n".join(parts))
    return "\n\n".join(blocks)


def summary_line(files: int, errors: int, warnings: int) -> str:
    noun = "file" if files == 1 else "files"
    return f"{files} {noun} checked: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"


def format_json(results: Sequence[tuple[str, Sequence[Diagnostic]]]) -> str:
    """``[{"file": ..., "ok": ..., "diagnostics": [...]}, ...]`` as indented JSON."""
    payload = [
        {
            "file": name,
            "ok": not any(d.is_error for d in diags),
            "diagnostics": [d.to_dict() for d in diags],
        }
        for name, diags in results
    ]
    return json.dumps(payload, indent=2, ensure_ascii=False)


def format_github(name: str, diagnostics: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands (``::error file=...,line=...::message``)."""
    out = []
    for diag in diagnostics:
        kind = "error" if diag.is_error else "warning" if diag.severity == Severity.WARNING else "notice"
        s, e = diag.range.start, diag.range.end
        props = (
            f"file={_escape_prop(name)},line={s.line + 1},col={s.character + 1},"
            f"endLine={e.line + 1},endColumn={e.character + 1},title={diag.code}"
        )
        out.append(f"::{kind} {props}::{_escape_data(diag.message)}")
    return "\n".join(out)


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")
