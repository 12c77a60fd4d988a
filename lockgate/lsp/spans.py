"""Document ranges of character spans inside string values, for the features that convert a
great many of them (semantic tokens, the symbol index).

The source map's :meth:`span_range` maps decoded characters to the source through a table of
every character of the scalar, built on first use and kept with the analysis: about 80 bytes per
character, so a 3 MB spec held ~200 MB of them once its tokens were computed. Most strings need
no table, because they are written verbatim: a one-line scalar whose source text (inside its
quotes, if any) *is* its value, or a literal block (``|``) each of whose lines is its source line
less the block's indentation. Those are mapped here, after checking that the text is indeed
verbatim; any other scalar (escapes, folding, flow scalars over several lines) and any span
over a line break go to the source map.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from lockgate.dsl.diagnostics import Position, Range, YamlPath

from .documents import Analysis
from .positions import LineIndex

_QUOTES = ("'", '"')


@dataclass(frozen=True, slots=True)
class _Verbatim:
    """A value written verbatim: line ``k`` of the value (``starts[k]`` is its offset in the
    value) starts at column ``column`` of document line ``line + k``."""

    line: int
    column: int
    starts: tuple[int, ...]
    ends: tuple[int, ...]  # where each value line's content ends (before its line break)

    def range(self, start: int, end: int) -> Range | None:
        """The range of ``[start, end)`` when it is on one line, outside its line break."""
        k = bisect_right(self.starts, start) - 1
        if k < 0 or not (start < self.ends[k] and end <= self.ends[k]):
            return None
        line, base = self.line + k, self.column - self.starts[k]
        return Range(Position(line, base + start), Position(line, base + end))


class SpanRanges:
    """Span ranges of one analysis; remembers, per value, how it is written."""

    def __init__(self, analysis: Analysis) -> None:
        self._source: Any = analysis.source_map
        self._lines = analysis.lines
        self._text = analysis.text
        self._layouts: dict[YamlPath, _Verbatim | None] = {}

    def range(self, path: YamlPath, value: str, start: int, end: int) -> Range:
        """The range of ``value[start:end]``, the string at ``path`` (as ``span_range``)."""
        layout = self._layouts.get(path, False)
        if layout is False:
            layout = self._layouts[path] = _layout(self._source.value_range(path), value, self._lines)
        found = None
        if layout is not None:  # ``value`` is then the scalar, and offsets clamp to it
            low = max(0, min(start, len(value)))
            found = layout.range(low, max(low, min(end, len(value))))
        return found if found is not None else self._source.span_range(path, start, end)

    def key_range(self, path: YamlPath) -> Range:
        """The source map's range of the key of ``path`` (so the index needs one object)."""
        return self._source.key_range(path)


def _layout(rng: Range, value: str, lines: LineIndex) -> _Verbatim | None:
    if rng.start.line == rng.end.line:
        return _one_line(rng, value, lines)
    if lines.line(rng.start.line)[rng.start.character:rng.start.character + 1] == "|":
        return _literal_block(rng.start.line + 1, value, lines)
    return None


def _one_line(rng: Range, value: str, lines: LineIndex) -> _Verbatim | None:
    written = lines.line(rng.start.line)[rng.start.character:rng.end.character]
    column = rng.start.character
    if len(written) == len(value) + 2 and written[0] in _QUOTES and written[-1] == written[0]:
        written, column = written[1:-1], column + 1
    if written != value or "\n" in value:
        return None
    return _Verbatim(rng.start.line, column, (0,), (len(value),))


def _literal_block(first: int, value: str, lines: LineIndex) -> _Verbatim | None:
    """A literal block's layout, if every value line is its source line less one indentation
    (a blank value line may be written with fewer spaces; such lines hold no span)."""
    parts = value.split("\n")
    if parts and parts[-1] == "":
        parts.pop()  # the final line break (or the blank lines kept by ``|+``) end the value
    indent = None
    starts, ends, offset = [], [], 0
    for k, part in enumerate(parts):
        written = lines.line(first + k)
        if part:
            indent = len(written) - len(part) if indent is None else indent
            if indent < 0 or written[indent:] != part or written[:indent].strip(" "):
                return None
        elif written.strip(" "):
            return None
        starts.append(offset)
        ends.append(offset + len(part))
        offset += len(part) + 1
    if indent is None:
        return None
    return _Verbatim(first, indent, tuple(starts), tuple(ends))


def span_ranges(analysis: Analysis) -> SpanRanges:
    """The (cached) span ranges of an analysis."""
    return analysis.memo("spans", SpanRanges)
