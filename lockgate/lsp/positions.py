"""Positions: code points inside the server, the negotiated encoding (UTF-16 by default) outside.

Everything in :mod:`lockgate.dsl` counts characters in code points (Python string indices) and
lines split on ``\\r\\n``, ``\\r`` and ``\\n`` only, as LSP does. This module is the one place
that converts to and from the client's position encoding; no other module of the server does
arithmetic on UTF-16 units. A :class:`LineIndex` is built once per document version (pygls'
own ``TextDocument.lines`` re-splits the whole text on every access and also breaks on
``\\x0b``, ``\\x85``, ``\\u2028`` and friends, which LSP does not).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Literal

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range

Encoding = Literal["utf-8", "utf-16", "utf-32"]

_BREAK = re.compile(r"\r\n|\r|\n")


def _unit_width(ch: str, encoding: Encoding) -> int:
    if encoding == "utf-32":
        return 1
    if encoding == "utf-16":
        return 2 if ord(ch) > 0xFFFF else 1
    return len(ch.encode("utf-8", "surrogatepass"))


class LineIndex:
    """Line starts of one text, for offset <-> position conversions in O(log n)."""

    __slots__ = ("_ascii", "_ends", "_starts", "_units", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts, self._ends = _line_bounds(text)
        self._units: dict[tuple[int, Encoding], _LineUnits | None] = {}
        self._ascii: bool | None = None  # whether the whole text is ASCII (no unit tables at all)

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line(self, number: int) -> str:
        """The text of line ``number`` without its line break ('' past the end)."""
        if not 0 <= number < len(self._starts):
            return ""
        return self.text[self._starts[number] : self._ends[number]]

    @property
    def end(self) -> Position:
        last = len(self._starts) - 1
        return Position(last, self._ends[last] - self._starts[last])

    # -- code points ---------------------------------------------------------------------------

    def offset(self, pos: Position) -> int:
        """The code-point offset of ``pos``, clamped into the document."""
        if pos.line < 0:
            return 0
        if pos.line >= len(self._starts):
            return len(self.text)
        start = self._starts[pos.line]
        return start + min(max(pos.character, 0), self._ends[pos.line] - start)

    def position(self, offset: int) -> Position:
        """The position of a code-point offset, clamped into the document."""
        offset = min(max(offset, 0), len(self.text))
        line = bisect_right(self._starts, offset) - 1
        return Position(line, min(offset, self._ends[line]) - self._starts[line])

    def clamp(self, pos: Position) -> Position:
        return self.position(self.offset(pos))

    def clamp_range(self, rng: Range) -> Range:
        start, end = self.clamp(rng.start), self.clamp(rng.end)
        return Range(start, max(start, end))

    # -- client encoding -----------------------------------------------------------------------

    def to_client(self, pos: Position, encoding: Encoding = "utf-16") -> lsp.Position:
        """A code-point position as an LSP position in ``encoding`` (clamped into the document)."""
        line, character = self.client_units(pos, encoding)
        return lsp.Position(line=line, character=character)

    def client_units(self, pos: Position, encoding: Encoding = "utf-16") -> tuple[int, int]:
        """:meth:`to_client` as a plain ``(line, character)``, for callers converting a great
        many positions (semantic tokens), which need no LSP object for each."""
        pos = self.clamp(pos)
        units = self._line_units(pos.line, encoding)
        return pos.line, units.to_units(pos.character) if units else pos.character

    def from_client(self, pos: lsp.Position, encoding: Encoding = "utf-16") -> Position:
        """An LSP position as a code-point position; a unit inside a character rounds down."""
        if pos.line >= len(self._starts):
            return self.end
        length = self._ends[pos.line] - self._starts[pos.line]
        units = self._line_units(pos.line, encoding)
        return Position(pos.line, min(units.to_index(pos.character) if units else max(pos.character, 0), length))

    def _line_units(self, number: int, encoding: Encoding) -> _LineUnits | None:
        """The unit table of line ``number`` (None when units and code points agree); built
        once per line and encoding, so converting many positions of one long line stays linear."""
        if encoding == "utf-32":
            return None
        if self._ascii is None:
            self._ascii = self.text.isascii()
        if self._ascii:
            return None
        key = (number, encoding)
        if key not in self._units:
            text = self.line(number)
            self._units[key] = None if text.isascii() else _LineUnits(text, encoding)
        return self._units[key]

    def splits_character(self, pos: lsp.Position, encoding: Encoding = "utf-16") -> bool:
        """Whether a client position falls inside one character (between the halves of a
        surrogate pair, inside a UTF-8 sequence): no edit can start or end there."""
        if not 0 <= pos.line < len(self._starts):
            return False
        units = self._line_units(pos.line, encoding)
        return units is not None and units.to_units(units.to_index(pos.character)) != pos.character

    def range_to_client(self, rng: Range, encoding: Encoding = "utf-16") -> lsp.Range:
        rng = self.clamp_range(rng)
        return lsp.Range(start=self.to_client(rng.start, encoding), end=self.to_client(rng.end, encoding))

    def range_from_client(self, rng: lsp.Range, encoding: Encoding = "utf-16") -> Range:
        start = self.from_client(rng.start, encoding)
        end = self.from_client(rng.end, encoding)
        return Range(start, max(start, end))

    def offset_from_client(self, pos: lsp.Position, encoding: Encoding = "utf-16") -> int:
        return self.offset(self.from_client(pos, encoding))


def _line_bounds(text: str) -> tuple[list[int], list[int]]:
    """The start and end (before the break) offset of every line. Rebuilt on every edit, so the
    common case, no ``\r``, is done by ``str.split`` rather than a loop over regex matches."""
    if "\r" not in text:
        starts = list(accumulate((len(line) + 1 for line in text.split("\n")), initial=0))
        starts.pop()
        ends = [start - 1 for start in starts[1:]]
    else:
        starts, ends = [0], []
        for match in _BREAK.finditer(text):
            ends.append(match.start())
            starts.append(match.end())
    ends.append(len(text))
    return starts, ends


class _LineUnits:
    """Code points <-> code units on one line with characters wider than one unit: only the
    wide characters are listed, so a conversion is a binary search."""

    __slots__ = ("_extra", "_index", "_start", "_width")

    def __init__(self, text: str, encoding: Encoding) -> None:
        self._index: list[int] = []  # code-point index of each wide character
        self._start: list[int] = []  # its first code unit
        self._width: list[int] = []
        self._extra: list[int] = []  # units beyond one per character, up to and including it
        extra = 0
        for index, ch in enumerate(text):
            if ch.isascii():
                continue
            width = _unit_width(ch, encoding)
            if width > 1:
                self._index.append(index)
                self._start.append(index + extra)
                self._width.append(width)
                extra += width - 1
                self._extra.append(extra)

    def to_units(self, index: int) -> int:
        """The code unit where the character at code point ``index`` starts."""
        before = bisect_left(self._index, index)
        return index + (self._extra[before - 1] if before else 0)

    def to_index(self, unit: int) -> int:
        """The code point of the character holding code unit ``unit`` (not clamped to the line)."""
        unit = max(unit, 0)
        before = bisect_right(self._start, unit)
        if not before:
            return unit
        last = before - 1
        if unit < self._start[last] + self._width[last]:
            return self._index[last]
        return unit - self._extra[last]


def encoding_of(kind: object) -> Encoding:
    """Normalise pygls' negotiated ``PositionEncodingKind`` (or None) to an :data:`Encoding`."""
    value = getattr(kind, "value", kind)
    if value in ("utf-8", "utf-32"):
        return value  # type: ignore[return-value]
    return "utf-16"


def apply_change(text: str, rng: lsp.Range | None, new_text: str, encoding: Encoding = "utf-16",
                 index: LineIndex | None = None) -> str:
    """``text`` with the client range ``rng`` replaced (the whole text when ``rng`` is None).

    The server keeps its own copy of each document so that line breaks are counted the LSP way
    (pygls' workspace splits lines on ``\\u2028`` and similar characters too).
    """
    if rng is None:
        return new_text
    index = index if index is not None and index.text is text else LineIndex(text)
    start = index.offset_from_client(rng.start, encoding)
    end = max(start, index.offset_from_client(rng.end, encoding))
    return text[:start] + new_text + text[end:]


class LineMap:
    """Line numbers of an older text in a newer one, when they differ in one block of lines
    (what typing between two analyses produces): the lines before the block keep their number,
    the lines after it shift by the block's change in length, lines inside it have no match.

    Lets requests answer from an analysis of the older text for a cursor on an unchanged line.
    """

    __slots__ = ("new_suffix", "old_suffix", "prefix", "shift")

    def __init__(self, old: list[str], new: list[str]) -> None:
        limit = min(len(old), len(new))
        prefix = 0
        while prefix < limit and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
            suffix += 1
        self.prefix = prefix
        self.old_suffix = len(old) - suffix  # first old line of the common tail
        self.new_suffix = len(new) - suffix
        self.shift = len(new) - len(old)

    def to_old(self, line: int) -> int | None:
        """The older text's number of new line ``line``; None when that line changed."""
        if line < self.prefix:
            return line
        if line >= self.new_suffix:
            return line - self.shift
        return None

    def to_new(self, line: int) -> int | None:
        """The newer text's number of old line ``line``; None when that line changed."""
        if line < self.prefix:
            return line
        if line >= self.old_suffix:
            return line + self.shift
        return None

    def range_to_new(self, rng: Range) -> Range | None:
        """An older range in the newer text; None unless both ends are on unchanged lines."""
        start, end = self.to_new(rng.start.line), self.to_new(rng.end.line)
        if start is None or end is None:
            return None
        return Range(Position(start, rng.start.character), Position(end, rng.end.character))
