"""The text report's source excerpts: a caret under the range, and a window on very long lines."""

from __future__ import annotations

from lockgate.dsl.loader import load
from lockgate.dsl.report import EXCERPT_WIDTH, caret_excerpt, format_text

HEAD = "version: 1\nflows:\n  entry: main\n  main:\n    input: {}\n    steps:\n      - id: a\n"


def _unknown_ref(text: str):
    return next(d for d in load(text).diagnostics if d.code == "LG403")


def test_the_caret_sits_under_the_reference():
    text = HEAD + '        do: "${nope.output}"\n'
    excerpt = caret_excerpt(text, _unknown_ref(text))
    source, caret = excerpt.splitlines()
    assert source == '8 |         do: "${nope.output}"'
    assert caret.index("^") == source.index("nope") and caret.count("^") == len("nope")


def test_a_very_long_line_is_shown_as_a_window_around_the_range():
    text = HEAD + '        do: "' + "x" * 200_000 + " ${nope.output} " + "y" * 5_000 + '"\n'
    diag = _unknown_ref(text)
    report = format_text("long.yaml", text, [diag])
    assert max(len(line) for line in report.splitlines()) < EXCERPT_WIDTH + 80
    source, caret = caret_excerpt(text, diag).splitlines()
    assert source.startswith("8 | …") and source.endswith("…")
    assert caret.index("^") == source.index("nope") and caret.count("^") == len("nope")


def test_control_characters_in_a_line_are_shown_not_sent_to_the_terminal():
    text = HEAD + '        do: "x"\x1b[31m red\n'
    diag = next(d for d in load(text).diagnostics if d.range.start.line == 7)
    source, caret = caret_excerpt(text, diag).splitlines()
    assert "\x1b" not in source and '"x"\u241b[31m red' in source
    assert len(source) == len('8 | ' + '        do: "x"\x1b[31m red')  # one picture per character
