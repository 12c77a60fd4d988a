"""A ``%%flow`` cell's diagnostics in the cell's own line numbers, as an editor numbers them.

IPython gives the magic the cell's body: the lines below the ``%%flow`` line, without that line
and without the blank lines above it, which it drops first. :func:`lines_above` counts those
lines from the cell as written (IPython's ``pre_run_cell`` event has it), so that a blank line
above ``%%flow`` does not shift every line a cell reports; :func:`in_cell` moves a diagnostic
down that many lines.

The dsl locates a diagnostic in the spec document, the cell's body: its range and its related
ranges are data, shifted here as data. A few messages also quote a document line in their
text, a number :mod:`lockgate.dsl.yamlerrors` (LG103: the mapping or list that "starts on
line N", the bracket "opened on line N", the string that "runs on to line N", the hint "at the
end of line N") and :mod:`lockgate.dsl.yamlevents` (LG104: "already defined on line N") put
into the string and keep nowhere else as data (LG104's related range marks the same line, the
others have none). Those numbers are shifted by matching exactly these phrases, in these codes
only; ``tests/kernel_ext/test_review_cell_lines.py`` checks every number the cell shows against
the CLI's report of the same spec, so a new phrase that quotes a line fails there.
"""

from __future__ import annotations

import dataclasses
import re

from ..dsl.diagnostics import Diagnostic, Position, Range, Related

#: The phrases that quote a document line, by the code whose messages (and hints) use them.
#: LG104's message ends with its number; its key, which comes first, is the spec's own text.
_QUOTED_LINE = {
    "LG103": re.compile(r"\b(starts on line |opened on line |runs on to line |at the end of line )(\d+)\b"),
    "LG104": re.compile(r"(already defined on line )(\d+)$"),
}


#: Lines above the body of a cell that starts with its ``%%flow`` line (the body starts on line 2).
MAGIC_LINE = 1


def lines_above(raw_cell: str | None, body: str) -> int:
    """How many lines of ``raw_cell`` (the cell as written) stand above ``body`` (what the cell
    magic was given): the ``%%flow`` line and the blank lines above it, which IPython drops.

    :data:`MAGIC_LINE` when ``body`` is not the body of ``raw_cell`` (``run_cell_magic`` called
    from code, a cell run silently, which no ``pre_run_cell`` event announces) or there is no
    cell. The lines are split as IPython's input transformer splits them.
    """
    if raw_cell is None:
        return MAGIC_LINE
    lines = raw_cell.splitlines(keepends=True)
    first = next((n for n, line in enumerate(lines) if line and not line.isspace()), None)
    if first is None or not lines[first].startswith("%%"):
        return MAGIC_LINE
    rest = "".join(lines[first + 1:])
    return first + 1 if body in (rest, rest + "\n") else MAGIC_LINE


def in_cell(diag: Diagnostic, offset: int) -> Diagnostic:
    """``diag`` with its ranges and the lines its message and hint quote moved down ``offset`` lines."""
    related = tuple(Related(_range(r.range, offset), r.message) for r in diag.related)
    return dataclasses.replace(diag, range=_range(diag.range, offset), related=related,
                               message=_text(diag.code, diag.message, offset),
                               hint=_text(diag.code, diag.hint, offset))


def _range(where: Range, offset: int) -> Range:
    return Range(Position(where.start.line + offset, where.start.character),
                 Position(where.end.line + offset, where.end.character))


def _text(code: str, text: str | None, offset: int) -> str | None:
    pattern = _QUOTED_LINE.get(code)
    if text is None or pattern is None:
        return text
    return pattern.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + offset}", text)
