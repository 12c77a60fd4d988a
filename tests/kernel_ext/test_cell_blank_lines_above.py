"""Blank lines above ``%%flow`` (which IPython drops before the magic sees the cell) do not shift
the line numbers a cell reports: an error's location, its excerpt's gutter, a line a message
quotes, a warning's line all name the line of the cell as written (a real kernel)."""

from __future__ import annotations

import pytest
from kernel_session import KernelSession

SPEC = '''version: 1
contracts:
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
        do: "Do ${input.txt}"
        agent: worker
        out: Out
'''
#: A valid spec whose advisory warning (an unused contract) is about its ``Unused:`` line.
UNUSED = SPEC.replace("${input.txt}", "${input.text}").replace("contracts:\n", "contracts:\n  Unused:\n    a: string\n", 1)
#: A bracket never closed: the message quotes the line it was opened on.
UNCLOSED = "version: 1\nflows:\n  main:\n    steps: [a, b\n"
ABOVE = ["", "\n\n", " \n\t\n\n"]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    session = KernelSession(tmp_path_factory.mktemp("kernel"))
    yield session
    session.close()


def _line_of(cell: str, text: str) -> int:
    """The 1-based line of ``cell`` (as an editor numbers it) holding ``text``."""
    return next(n for n, line in enumerate(cell.split("\n"), 1) if text in line)


@pytest.mark.parametrize("above", ABOVE)
def test_an_error_names_the_cell_line_it_is_on(kernel, above):
    cell = f"{above}%%flow typo\n{SPEC}"
    line = _line_of(cell, "input.txt")
    out = kernel.run(cell)
    assert out.error is not None and out.error["ename"] == "FlowCellError", out.shown
    assert f"cell:{line}:24: error LG404" in out.traceback, out.traceback
    assert f'{line} |         do: "Do ${{input.txt}}"' in out.traceback, out.traceback


@pytest.mark.parametrize("above", ABOVE)
def test_a_quoted_line_is_the_cell_line_it_names(kernel, above):
    cell = f"{above}%%flow unclosed --no-lint\n{UNCLOSED}"
    out = kernel.run(cell)
    assert f"the `[` opened on line {_line_of(cell, 'steps: [a, b')} is not closed" in out.traceback, out.traceback


@pytest.mark.parametrize("above", ABOVE)
def test_a_warning_names_the_cell_line_it_is_on(kernel, above):
    cell = f"{above}%%flow unused\n{UNUSED}"
    line = _line_of(cell, "Unused:")
    out = kernel.run(cell)
    assert out.error is None, out.traceback
    assert f"  line {line}: LG901 contract 'Unused'" in out.data[0]["text/plain"], out.shown
    assert f"<code>LG901</code> line {line}:" in out.data[0]["text/html"]


def test_a_spec_bound_from_code_counts_its_first_line_as_line_2(kernel):
    """``run_cell_magic`` called from code has no cell of its own: the spec's first line is line
    2, as in a cell that starts with ``%%flow`` (whatever blank lines the calling cell has)."""
    kernel.run(f"spec_text = {UNUSED!r}")
    out = kernel.run('\n\nget_ipython().run_cell_magic("flow", "fromcode", spec_text)')
    assert f"  line {_line_of(UNUSED, 'Unused:') + 1}: LG901" in out.data[0]["text/plain"], out.shown
