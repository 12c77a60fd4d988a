"""A ``%%flow`` cell's diagnostics in the cell's own line numbers, as an editor numbers them.

IPython gives the magic the cell's body: the lines below the ``%%flow`` line, without that line
and without the blank lines above it, which it drops first, and, when the ``%%flow`` line is
indented, with that indentation taken off every line that starts with it. :func:`place` finds
the body in the cell as written (IPython's ``pre_run_cell`` event has it): how many lines stand
above it and which of its lines lost the indentation, so that a blank line above ``%%flow`` or
a cell indented as a whole does not shift the lines and columns a cell reports; :func:`in_cell`
moves a diagnostic down that many lines and right on the lines that were dedented.

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

#: The indentation IPython takes off a cell whose first line is indented (its ``leading_indent``).
_INDENT = re.compile(r"^[ \t]+")


@dataclasses.dataclass(frozen=True, slots=True)
class CellPlace:
    """Where the body a cell magic was given stands in the cell as written.

    ``above``: the lines above the body (the ``%%flow`` line and the blank lines above it);
    ``shifts``: per line of the body, the columns IPython took off its start (empty when it
    took none); ``text``: the body as written, whose lines the shifted columns point into.
    """

    above: int
    text: str
    shifts: tuple[int, ...] = ()


def place(raw_cell: str | None, body: str) -> CellPlace:
    """Where ``body`` (what the cell magic was given) stands in ``raw_cell`` (the cell as written).

    The body as given, :data:`MAGIC_LINE` lines down, when ``body`` is not the body of
    ``raw_cell`` (``run_cell_magic`` called from code, a cell run silently, which no
    ``pre_run_cell`` event announces) or there is no cell. The lines are split and dedented as
    IPython's input transformer splits and dedents them.
    """
    given = CellPlace(MAGIC_LINE, body)
    if raw_cell is None:
        return given
    lines = raw_cell.splitlines(keepends=True)
    first = next((n for n, line in enumerate(lines) if line and not line.isspace()), None)
    if first is None:
        return given
    found = _INDENT.match(lines[first])
    indent = found.group(0) if found else ""
    if not lines[first].startswith("%%", len(indent)):
        return given
    written = lines[first + 1:]
    shifts = tuple(len(indent) if line.startswith(indent) else 0 for line in written)
    rest = "".join(line[shift:] for line, shift in zip(written, shifts))
    if body not in (rest, rest + "\n"):
        return given
    return CellPlace(first + 1, "".join(written), shifts if indent else ())


def in_cell(diag: Diagnostic, offset: int, shifts: tuple[int, ...] = ()) -> Diagnostic:
    """``diag`` with its ranges and the lines its message and hint quote moved down ``offset``
    lines, and each position on line N of the body moved right ``shifts[N]`` columns (see
    :class:`CellPlace`)."""
    related = tuple(Related(_range(r.range, offset, shifts), r.message) for r in diag.related)
    return dataclasses.replace(diag, range=_range(diag.range, offset, shifts), related=related,
                               message=_text(diag.code, diag.message, offset),
                               hint=_text(diag.code, diag.hint, offset))


def _range(where: Range, offset: int, shifts: tuple[int, ...]) -> Range:
    return Range(_position(where.start, offset, shifts), _position(where.end, offset, shifts))


def _position(at: Position, offset: int, shifts: tuple[int, ...]) -> Position:
    shift = shifts[at.line] if 0 <= at.line < len(shifts) else 0
    return Position(at.line + offset, at.character + shift)


def _text(code: str, text: str | None, offset: int) -> str | None:
    pattern = _QUOTED_LINE.get(code)
    if text is None or pattern is None:
        return text
    return pattern.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + offset}", text)
