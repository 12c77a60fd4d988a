"""Code points <-> client encodings, with non-BMP characters and LSP line breaks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_harness import units_of
from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range
from lockgate.lsp.positions import LineIndex, apply_change, encoding_of


def test_non_bmp_character_counts_two_utf16_units():
    index = LineIndex('k: "𝄞 x"\n')
    x = Position(0, 6)
    assert index.line(0)[6] == "x"
    assert index.to_client(x) == lsp.Position(line=0, character=7)
    assert index.to_client(x, "utf-8") == lsp.Position(line=0, character=9)
    assert index.to_client(x, "utf-32") == lsp.Position(line=0, character=6)
    assert index.from_client(lsp.Position(line=0, character=7)) == x
    assert index.from_client(lsp.Position(line=0, character=9), "utf-8") == x


def test_unit_inside_a_surrogate_pair_rounds_down():
    index = LineIndex("𝄞x")
    assert index.from_client(lsp.Position(line=0, character=1)) == Position(0, 0)
    assert index.from_client(lsp.Position(line=0, character=2)) == Position(0, 1)


def test_only_lsp_line_breaks_split_lines():
    index = LineIndex("a\u2028b\r\nc\rd\ne\x85f")
    assert [index.line(i) for i in range(index.line_count)] == ["a\u2028b", "c", "d", "e\x85f"]
    assert index.position(len("a\u2028b\r\n")) == Position(1, 0)


def test_positions_are_clamped_into_the_document():
    index = LineIndex("ab\ncd")
    assert index.clamp(Position(0, 99)) == Position(0, 2)
    assert index.clamp(Position(7, 3)) == Position(1, 2)
    assert index.clamp(Position(-1, 0)) == Position(0, 0)
    assert index.range_to_client(Range.of(0, 1, 9, 9)) == lsp.Range(
        start=lsp.Position(line=0, character=1), end=lsp.Position(line=1, character=2)
    )
    assert index.from_client(lsp.Position(line=5, character=0)) == Position(1, 2)


def test_incremental_change_in_utf16_units():
    text = "a: 𝄞b\nc: d\n"
    rng = lsp.Range(start=lsp.Position(line=0, character=5), end=lsp.Position(line=1, character=1))
    assert apply_change(text, rng, "X") == "a: 𝄞X: d\n"
    assert apply_change(text, None, "new") == "new"


def test_encoding_names():
    assert encoding_of(lsp.PositionEncodingKind.Utf8) == "utf-8"
    assert encoding_of(None) == "utf-16"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", "𝄞", "\n", "\r", "\r\n", " ", "\u2028"]), max_size=40).map("".join), st.data())
def test_round_trip_through_every_encoding(text, data):
    index = LineIndex(text)
    offset = data.draw(st.integers(0, len(text)))
    pos = index.position(offset)
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return  # between \r and \n: not a position an editor can name
    for encoding in ("utf-8", "utf-16", "utf-32"):
        assert index.from_client(index.to_client(pos, encoding), encoding) == pos
    assert index.offset(pos) == offset


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("ab \t$é中€𝄞🎉\ud800")), max_size=30), st.integers(0, 90),
       st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_units_agree_with_the_encoder_at_every_unit(line, unit, encoding):
    # the per-line tables of wide characters must give what counting every prefix gives
    index = LineIndex("top\n" + line + "\nend")
    found = index.from_client(lsp.Position(line=1, character=unit), encoding)
    fits = [i for i in range(len(line) + 1) if units_of(line[:i], encoding) <= unit]
    assert found == Position(1, max(fits))
    assert index.to_client(found, encoding).character == units_of(line[: found.character], encoding)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", "\n", "\r", "\r\n", "\u2028", "\x85", " "]), max_size=40).map("".join))
def test_lines_are_what_lsp_breaks_give(text):
    # the index takes a fast path for texts without \r: both paths must split as LSP does
    import re

    expected = re.split(r"\r\n|\r|\n", text)
    index = LineIndex(text)
    assert [index.line(i) for i in range(index.line_count)] == expected
    assert index.end == Position(len(expected) - 1, len(expected[-1]))
