"""A ``%%flow`` cell reports the spec as ``lockgate validate`` does, every line number one more
(the ``%%flow`` line is line 1): locations, carets' gutters, and the lines messages quote."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from lockgate.cli import main

FLOW = ("version: 1\ncontracts:\n  R:\n    value: string\nflows:\n  entry: main\n  main:\n    input:\n"
        "      text: string\n    output:\n      from: \"${a.output}\"\n      contract: R\n    steps:\n")
SPECS = {
    "duplicate key": FLOW + "      - id: a\n        do: x\n        agent: a\n        out: R\n        out: R\n",
    "list indentation": FLOW + "      - id: a\n        do: x\n      k: 1\n",
    "mapping indentation": "version: 1\nflows:\n  main:\n    steps:\n    - a\n    - b\n   c\n",
    "unclosed bracket": "version: 1\nflows:\n  main:\n    steps: [a, b\n",
    "runaway quote": "version: 1\nflows:\n  main:\n    do: \"abc\n    x: \"d\"\n",
    "unknown contract": FLOW + "      - id: a\n        do: x\n        agent: a\n        out: Nope\n",
}
#: A location (``name:LINE:``), an excerpt's gutter (``LINE |``), a line a message quotes.
NUMBERS = re.compile(r"^[^:\s]+:(\d+):|^(\d+) \||\bline (\d+)\b", re.MULTILINE)


def _numbers(report: str) -> list[int]:
    return [int(next(g for g in m.groups() if g)) for m in NUMBERS.finditer(report)]


def _words(report: str, name: str) -> str:
    """The report without its line numbers and file name (gutters lose their width too)."""
    text = NUMBERS.sub("#", report.replace(f"{name}:", "cell:"))
    return re.sub(r"^ +\|", "|", text, flags=re.MULTILINE)


@pytest.mark.parametrize("kind", SPECS)
def test_the_cell_shows_every_line_number_of_the_cli_report_plus_one(shell, capsys, tmp_path, kind):
    (tmp_path / "spec.yaml").write_text(SPECS[kind])
    cli = CliRunner().invoke(main, ["validate", "--no-lint", "spec.yaml"]).output
    cli = cli[:cli.rindex("\n1 file checked")].rstrip("\n")
    shell.run_cell("%%flow x --no-lint\n" + SPECS[kind])
    cell = capsys.readouterr().out.split("\n\n", 1)[1].rstrip("\n")
    assert _numbers(cli) and _numbers(cell) == [n + 1 for n in _numbers(cli)]
    assert _words(cell, "cell") == _words(cli, "spec.yaml")


@pytest.mark.parametrize("kind, quoted", [
    ("duplicate key", "duplicate key `out`: it is already defined on line 18"),
    ("list indentation", "the list that starts on line 15; check the indentation"),
    ("mapping indentation", "the mapping that starts on line 4; check the indentation"),
    ("unclosed bracket", "the `[` opened on line 5 is not closed"),
    ("runaway quote", "it runs on to line 6, where the next \" closes it\n"),
    ("runaway quote", "hint: add the closing \" at the end of line 5"),
])
def test_a_quoted_line_is_the_cell_line_it_names(shell, capsys, kind, quoted):
    shell.run_cell("%%flow x --no-lint\n" + SPECS[kind])
    assert quoted in capsys.readouterr().out


def test_in_cell_moves_ranges_and_related_ranges_and_only_the_quoted_line():
    from lockgate.dsl.diagnostics import Diagnostic, Range, Related
    from lockgate.kernel_ext.celllines import in_cell

    key = "x already defined on line 3"  # a key is the spec's text, not a quoted line
    diag = Diagnostic("LG104", f"duplicate key `{key}`: it is already defined on line 3", Range.of(4, 2, 4, 5),
                      related=(Related(Range.of(2, 2, 2, 5), "first defined here"),))
    moved = in_cell(diag, 1)
    assert moved.message == f"duplicate key `{key}`: it is already defined on line 4"
    assert (moved.range, moved.related[0].range) == (Range.of(5, 2, 5, 5), Range.of(3, 2, 3, 5))
    other = Diagnostic("LG302", "see line 3", Range.of(0, 0, 0, 1), hint="line 3")
    assert (in_cell(other, 1).message, in_cell(other, 1).hint) == ("see line 3", "line 3")
