"""span_range / offset_in_value: characters of a decoded string value back to the document,
for every scalar style. Golden ranges are the document characters that produced the decoded
characters, found by text search."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl.diagnostics import Position
from lockgate.dsl.scalars import char_sources
from lockgate.dsl.yamlsrc import LineIndex, parse_yaml

REF = "${input.topic}"


def span_of(text: str, key: str, needle: str, occurrence: int = 0):
    parsed = parse_yaml(text)
    value = parsed.data[key]
    idx = -1
    for _ in range(occurrence + 1):
        idx = value.index(needle, idx + 1)
    return parsed.source_map.span_range((key,), idx, idx + len(needle))


def doc_range(text: str, needle: str, occurrence: int = 0, length: int | None = None):
    idx = -1
    for _ in range(occurrence + 1):
        idx = text.index(needle, idx + 1)
    return LineIndex(text).range(idx, idx + (len(needle) if length is None else length))


def test_plain() -> None:
    text = f"do: Write about {REF} now\n"
    assert span_of(text, "do", REF) == doc_range(text, REF)


def test_plain_multiline_folds_newlines() -> None:
    text = f"do: Write a short\n  essay about\n\n  {REF} please\nnext: 1\n"
    parsed = parse_yaml(text)
    assert parsed.data["do"] == f"Write a short essay about\n{REF} please"
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "essay") == doc_range(text, "essay")


def test_single_quoted_with_doubled_quotes() -> None:
    text = f"do: 'It''s about {REF}, isn''t it'\n"
    assert parse_yaml(text).data["do"] == f"It's about {REF}, isn't it"
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "'", 1) == doc_range(text, "''", 1)


def test_double_quoted_escapes_and_non_bmp() -> None:
    text = f'do: "caf\\u00e9 \\t 😀 \\U0001F600 {REF} \\"q\\""\n'
    parsed = parse_yaml(text)
    assert parsed.data["do"] == f'café \t 😀 😀 {REF} "q"'
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "é") == doc_range(text, "\\u00e9")
    assert span_of(text, "do", "😀", 1) == doc_range(text, "\\U0001F600")
    assert span_of(text, "do", "😀", 0) == doc_range(text, "😀")
    assert span_of(text, "do", '"q"') == doc_range(text, '\\"q\\"')


def test_double_quoted_line_folding_and_escaped_break() -> None:
    text = f'do: "first line\n  second \\\n  {REF}"\n'
    parsed = parse_yaml(text)
    assert parsed.data["do"] == f"first line second {REF}"
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "second") == doc_range(text, "second")


def test_literal_block() -> None:
    text = f"do: |\n  Line one\n    indented {REF}\n\n  last\nnext: 1\n"
    parsed = parse_yaml(text)
    assert parsed.data["do"] == f"Line one\n  indented {REF}\n\nlast\n"
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "last") == doc_range(text, "last")


def test_literal_strip_and_keep() -> None:
    text = f"a: |-\n  x {REF}\n\nb: |+\n  y {REF}\n\nc: 1\n"
    parsed = parse_yaml(text)
    assert parsed.data["a"] == f"x {REF}" and parsed.data["b"] == f"y {REF}\n\n"
    assert span_of(text, "a", REF) == doc_range(text, REF, 0)
    assert span_of(text, "b", REF) == doc_range(text, REF, 1)


def test_folded_block() -> None:
    text = f"do: >\n  Write a\n  short essay\n\n  about {REF}\n    kept as is\nnext: 1\n"
    parsed = parse_yaml(text)
    assert parsed.data["do"] == f"Write a short essay\nabout {REF}\n  kept as is\n"
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "short") == doc_range(text, "short")


def test_folded_keep_and_explicit_indent() -> None:
    text = f"do: >+2\n    indented first\n  then {REF}\n\nnext: 1\n"
    parsed = parse_yaml(text)
    assert parsed.data["do"] == f"  indented first\nthen {REF}\n\n"
    assert span_of(text, "do", REF) == doc_range(text, REF)
    assert span_of(text, "do", "indented") == doc_range(text, "indented")


def test_offset_in_value_inverts_span_range() -> None:
    text = f'do: "caf\\u00e9 {REF}"\n'
    parsed = parse_yaml(text)
    sm = parsed.source_map
    value = parsed.data["do"]
    lines = LineIndex(text)
    ref_at = text.index(REF)
    assert sm.offset_in_value(("do",), lines.position(ref_at + 2)) == value.index(REF) + 2
    assert sm.offset_in_value(("do",), lines.position(text.index("\\u00e9") + 3)) == value.index("é")
    assert sm.offset_in_value(("do",), Position(0, 1)) is None
    for i in range(len(value) + 1):
        start = sm.span_range(("do",), i, i).start
        assert sm.offset_in_value(("do",), start) == i


def test_span_range_clamps_and_falls_back() -> None:
    text = "do: abc\nn: 3\n"
    sm = parse_yaml(text).source_map
    assert sm.span_range(("do",), 1, 99) == doc_range(text, "bc")
    assert sm.span_range(("n",), 0, 1) == doc_range(text, "3")


# -- every style PyYAML can emit maps exactly ------------------------------------------------------

_TEXT = st.text(
    alphabet=st.sampled_from(list("ab z$'\"\\{}:#-\n\t") + ["é", "😀", "\u00a0"]), min_size=0, max_size=40
)


@settings(max_examples=150, deadline=None)
@given(value=_TEXT, style=st.sampled_from([None, "'", '"', "|", ">"]), width=st.integers(8, 60))
def test_replay_matches_libyaml_for_emitted_scalars(value: str, style: str | None, width: int) -> None:
    text = yaml.dump({"k": value}, default_style=style, width=width, allow_unicode=True)
    parsed = parse_yaml(text)
    assert parsed.data == {"k": value}
    node = parsed.source_map.root.children["k"].node  # type: ignore[union-attr]
    chars = char_sources(parsed.source_map.text, node.start, node.extent, node.style, node.text or "")
    assert chars.exact, (text, node.style)
    assert list(chars.starts) == sorted(chars.starts)
    for ch, s in zip(value, chars.starts):
        if text[s] not in "\\'\n\r" and ch not in " \n":
            assert text[s] == ch


def test_crlf_line_endings() -> None:
    text = f"a: 1\r\ndo: |\r\n  line\r\n  two {REF}\r\nb: 'q\r\n  r {REF}'\r\n"
    parsed = parse_yaml(text)
    assert parsed.data == {"a": 1, "do": f"line\ntwo {REF}\n", "b": f"q r {REF}"}
    assert span_of(text, "do", REF) == doc_range(text, REF, 0)
    assert span_of(text, "b", REF) == doc_range(text, REF, 1)
    assert doc_range(text, REF, 1).start == Position(5, 4)
