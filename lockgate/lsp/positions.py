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
from bisect import bisect_right
from typing import Literal

from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range

Encoding = Literal["utf-8", "utf-16", "utf-32"]

_BREAK = re.compile(r"\r\n|\r|\n")


def _units(text: str, encoding: Encoding) -> int:
    """The length of ``text`` in code units of ``encoding``."""
    if encoding == "utf-32" or text.isascii():
        return len(text)
    if encoding == "utf-16":
        return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)
    return len(text.encode("utf-8", "surrogatepass"))


def _unit_width(ch: str, encoding: Encoding) -> int:
    if encoding == "utf-32":
        return 1
    if encoding == "utf-16":
        return 2 if ord(ch) > 0xFFFF else 1
    return len(ch.encode("utf-8", "surrogatepass"))


class LineIndex:
    """Line starts of one text, for offset <-> position conversions in O(log n)."""

    __slots__ = ("_ends", "_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        ends = []
        for match in _BREAK.finditer(text):
            ends.append(match.start())
            starts.append(match.end())
        ends.append(len(text))
        self._starts = starts
        self._ends = ends

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
        pos = self.clamp(pos)
        prefix = self.line(pos.line)[: pos.character]
        return lsp.Position(line=pos.line, character=_units(prefix, encoding))

    def from_client(self, pos: lsp.Position, encoding: Encoding = "utf-16") -> Position:
        """An LSP position as a code-point position; a unit inside a character rounds down."""
        if pos.line >= len(self._starts):
            return self.end
        text = self.line(pos.line)
        wanted = pos.character
        if encoding == "utf-32" or text.isascii():
            return Position(pos.line, min(wanted, len(text)))
        units = 0
        for index, ch in enumerate(text):
            width = _unit_width(ch, encoding)
            if units + width > wanted:
                return Position(pos.line, index)
            units += width
        return Position(pos.line, len(text))

    def range_to_client(self, rng: Range, encoding: Encoding = "utf-16") -> lsp.Range:
        rng = self.clamp_range(rng)
        return lsp.Range(start=self.to_client(rng.start, encoding), end=self.to_client(rng.end, encoding))

    def range_from_client(self, rng: lsp.Range, encoding: Encoding = "utf-16") -> Range:
        start = self.from_client(rng.start, encoding)
        end = self.from_client(rng.end, encoding)
        return Range(start, max(start, end))

    def offset_from_client(self, pos: lsp.Position, encoding: Encoding = "utf-16") -> int:
        return self.offset(self.from_client(pos, encoding))


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
