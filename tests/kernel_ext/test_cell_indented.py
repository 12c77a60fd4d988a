"""A ``%%flow`` cell indented as a whole (IPython takes the ``%%flow`` line's indentation off
every line that starts with it) reports the lines and columns of the cell as written: an
error's location, its excerpt and caret, a line a message quotes, a warning's line (a real
kernel). A body indented below an unindented ``%%flow`` line is given to the magic as written,
and reports its own columns too."""

from __future__ import annotations

import re

import pytest
from kernel_session import KernelSession

from lockgate.kernel_ext.celllines import MAGIC_LINE, CellPlace, place

#: A bracket never closed: the message quotes the line it was opened on.
UNCLOSED = "version: 1\nflows:\n  main:\n    steps: [a, b\n"
#: A valid spec whose advisory warning (an unused contract) is about its ``Unused:`` line.
UNUSED = '''version: 1
contracts:
  Unused:
    a: string
  Out:
    label: string
flows:
  entry: main
  main:
    input:
      text: string
    output:
      from: "${work.output}"
      contract: Out
    steps:
      - id: work
        do: "Do ${input.text}"
        agent: worker
        out: Out
'''
ABOVE = ["", "\n \n"]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    session = KernelSession(tmp_path_factory.mktemp("kernel"))
    yield session
    session.close()


def _indented(text: str, indent: str) -> str:
    return "".join(indent + line if line else line for line in text.splitlines(keepends=True))


def _line_of(cell: str, text: str) -> int:
    """The 1-based line of ``cell`` (as an editor numbers it) holding ``text``."""
    return next(n for n, line in enumerate(cell.split("\n"), 1) if text in line)


def _column_of(cell: str, text: str) -> int:
    """The 1-based column where ``text`` starts on its line of ``cell``."""
    return cell.split("\n")[_line_of(cell, text) - 1].index(text) + 1


def _caret_under(report: str, line: int, text: str) -> bool:
    """Whether the excerpt of ``line`` in ``report`` shows a line holding ``text`` with the
    caret under the first character of ``text``."""
    found = re.search(rf"^{line} \| (.*)\n *\| ( *)\^", report, re.MULTILINE)
    return found is not None and found.group(1).find(text) == len(found.group(2))


@pytest.mark.parametrize("above", ABOVE)
@pytest.mark.parametrize("indent", ["    ", "\t", "  \t "])
def test_a_cell_indented_as_a_whole_names_its_own_line_and_column(kernel, above, indent):
    cell = above + _indented("%%flow unclosed --no-lint\n" + UNCLOSED, indent)
    line, column = _line_of(cell, "steps: ["), _column_of(cell, "[a, b")
    out = kernel.run(cell)
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    assert f"cell:{line}:{column}: error LG103: the `[` opened on line {line} is not closed" in out.traceback, out.traceback
    assert _caret_under(out.traceback.replace("\t", " "), line, "[a, b"), out.traceback


def test_a_line_indented_less_than_the_magic_line_keeps_its_columns(kernel):
    """IPython dedents only the lines that start with the ``%%flow`` line's indentation."""
    cell = _indented("%%flow partly --no-lint\nversion: 1\nflows:\n  main:\n    steps: [a]\n", "    ") + "  other: [x\n"
    line, column = _line_of(cell, "other: ["), _column_of(cell, "[x")
    out = kernel.run(cell)
    assert f"cell:{line}:{column}: error LG103: the `[` opened on line {line} is not closed" in out.traceback, out.traceback
    assert _caret_under(out.traceback, line, "[x"), out.traceback


@pytest.mark.parametrize("above", ABOVE)
def test_a_body_indented_below_the_magic_line_names_its_own_column(kernel, above):
    cell = f"{above}%%flow body --no-lint\n" + _indented(UNCLOSED, "    ")
    line, column = _line_of(cell, "steps: ["), _column_of(cell, "[a, b")
    out = kernel.run(cell)
    assert f"cell:{line}:{column}: error LG103: the `[` opened on line {line} is not closed" in out.traceback, out.traceback
    assert _caret_under(out.traceback, line, "[a, b"), out.traceback


@pytest.mark.parametrize("above", ABOVE)
def test_a_warning_of_an_indented_cell_names_its_own_line(kernel, above):
    cell = above + _indented("%%flow unused\n" + UNUSED, "  ")
    out = kernel.run(cell)
    assert out.error is None, out.traceback
    assert f"  line {_line_of(cell, 'Unused:')}: LG901 contract 'Unused'" in out.data[0]["text/plain"], out.shown


def test_a_body_that_is_not_the_cells_is_placed_below_one_magic_line():
    """``run_cell_magic`` from code: the cell that ran is not the one the body comes from."""
    assert place("    %%flow x\n    version: 1\n", "version: 2\n") == CellPlace(MAGIC_LINE, "version: 2\n")
    assert place(None, "version: 1\n") == CellPlace(MAGIC_LINE, "version: 1\n")
    assert place("\n  %%flow x\n  a: 1\n\n b: 2", "a: 1\n\n b: 2") == CellPlace(2, "  a: 1\n\n b: 2", (2, 0, 0))
