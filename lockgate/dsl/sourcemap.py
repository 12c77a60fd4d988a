"""Where the values and keys of a parsed YAML document are, addressed by YAML path.

:class:`SourceMap` answers the position questions every later pass asks (the range of a value or
key, of a character span inside a decoded string, the path under a cursor) from the tree of
:class:`Node`/:class:`Slot` records the composer (:mod:`lockgate.dsl.yamlevents`) builds while it
reads the event stream. :class:`LineIndex` converts character indices to LSP-style positions.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any, Literal

from .diagnostics import Position, Range, YamlPath
from .scalars import CharSources, char_sources

_NEWLINES = re.compile(r"\r\n|\r|\n")


# -- positions ----------------------------------------------------------------------------------


class LineIndex:
    """Character index <-> (line, character) for a text; lines end at ``\\n``, ``\\r\\n`` or ``\\r``
    as in LSP (libyaml's NEL/LS/PS breaks do not start lines here, since indices are used)."""

    __slots__ = ("starts", "length")

    def __init__(self, text: str) -> None:
        self.starts = [0, *(m.end() for m in _NEWLINES.finditer(text))]
        self.length = len(text)

    def position(self, index: int) -> Position:
        index = max(0, min(index, self.length))
        line = bisect.bisect_right(self.starts, index) - 1
        return Position(line, index - self.starts[line])

    def index(self, pos: Position) -> int:
        line = max(0, min(pos.line, len(self.starts) - 1))
        nxt = self.starts[line + 1] if line + 1 < len(self.starts) else self.length
        return min(self.starts[line] + max(0, pos.character), nxt)

    def range(self, start: int, end: int) -> Range:
        return Range(self.position(start), self.position(end))


# -- the source map -----------------------------------------------------------------------------


class Node:
    """One composed YAML node: its source interval and, for collections, its entries.

    ``start``/``end`` is the tight source interval (block collections end at their last
    child; block scalars drop trailing blank lines). ``extent`` is where libyaml closed the node,
    used to place a cursor on an empty line inside a block mapping.
    """

    __slots__ = ("kind", "start", "end", "extent", "style", "text", "children", "size", "_chars")

    def __init__(self, kind: str, start: int, end: int | None = None, style: str | None = None,
                 text: str | None = None) -> None:
        self.kind = kind  # "map", "seq" or "scalar"
        self.start = start
        self.end = self.extent = start if end is None else end
        self.style = style
        self.text = text  # decoded scalar text (before type resolution)
        self.children: Any = {} if kind == "map" else [] if kind == "seq" else None
        self.size = 1
        self._chars: CharSources | None = None


class Slot:
    """A node in its place: the key interval (mapping entries) and the interval of the value
    *here*, which for an alias is the ``*name`` site while ``node`` is the anchored node.

    ``base`` is added to every position inside ``node``'s subtree to bring it into this slot's
    coordinates: non-zero only for the steps of a document assembled from separately parsed
    (and cached) chunks, whose subtrees keep chunk-relative positions.
    """

    __slots__ = ("key", "key_start", "key_end", "node", "start", "end", "base")

    def __init__(self, key: str | None, key_start: int, key_end: int, node: Node, start: int, end: int,
                 base: int = 0) -> None:
        self.key = key
        self.key_start = key_start
        self.key_end = key_end
        self.node = node
        self.start = start
        self.end = end
        self.base = base

    @property
    def is_alias(self) -> bool:
        return self.start != self.node.start + self.base


class SourceMap:
    """Positions of the values and keys of a parsed document, addressed by YAML path.

    Paths are tuples of mapping keys and sequence indices, as in :class:`Finding`. Ranges are
    0-based lines and code-point characters. Lookups of a path that does not exist fall back to
    its nearest existing ancestor, so a diagnostic always has a place.
    """

    def __init__(self, text: str, root: Node | None = None, base: int = 0) -> None:
        self.text = text
        self.root = root
        self._base = base  # characters before what libyaml saw (a byte-order mark)
        self._parse_text = text[base:] if base else text
        self._lines: LineIndex | None = None
        self._shifted_chars: dict[int, tuple[Node, int, CharSources]] = {}

    @property
    def lines(self) -> LineIndex:
        """The line index of the text, built on first use (a valid document needs none)."""
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    # lookups

    def exists(self, path: YamlPath) -> bool:
        return self._walk(path)[1] == len(path)

    def value_range(self, path: YamlPath) -> Range:
        """The range of the value at ``path`` (or of its nearest existing ancestor)."""
        slot, _, at = self._locate(path)
        if slot is None:
            return self._root_range()
        return self._range(slot.start + at, slot.end + at)

    def key_range(self, path: YamlPath) -> Range:
        """The range of the key of ``path``'s entry. For a missing path, the key of the nearest
        existing ancestor (so "missing key" diagnostics point at the parent's key); for a
        sequence item, its first key (or its value when it is not a mapping)."""
        slot, _, at = self._locate(path)
        if slot is None:
            return self._first_key_range(self.root, 0) or self._root_range()
        if slot.key is not None:
            return self._range(slot.key_start + at, slot.key_end + at)
        return self._first_key_range(slot.node, at + slot.base) or self._range(slot.start + at, slot.end + at)

    def span_range(self, path: YamlPath, start: int, end: int) -> Range:
        """The document range of characters ``[start, end)`` of the string value at ``path``.

        Offsets index the *decoded* string (after quotes, escapes, folding and block
        indentation are applied). Falls back to the value's range when the path is not a
        string scalar; offsets are clamped to the value.
        """
        slot, depth, at = self._locate(path)
        if slot is None or depth != len(path) or slot.node.kind != "scalar" or slot.node.text is None:
            return self.value_range(path)
        chars = self._chars(slot.node, at + slot.base)
        n = len(chars.starts)
        start = max(0, min(start, n))
        end = max(start, min(end, n))
        if start == end:
            point = chars.starts[start] if start < n else (chars.ends[-1] if n else chars.content_start)
            return self._range(point, point)
        return self._range(chars.starts[start], chars.ends[end - 1])

    def offset_in_value(self, path: YamlPath, position: Position) -> int | None:
        """The decoded-string offset at ``position`` inside the string value at ``path``
        (inverse of :meth:`span_range`); None when the position is outside that value."""
        slot, depth, at = self._locate(path)
        if slot is None or depth != len(path) or slot.node.kind != "scalar" or slot.node.text is None:
            return None
        node = slot.node
        shift = at + slot.base
        idx = self.lines.index(position) - self._base
        if idx < node.start + shift or idx > node.end + shift:
            return None
        chars = self._chars(node, shift)
        i = bisect.bisect_right(chars.starts, idx) - 1
        if i < 0:
            return 0
        return i + 1 if idx >= chars.ends[i] else i

    def path_at(self, position: Position) -> tuple[YamlPath, Literal["key", "value"]] | None:
        """The innermost entry at ``position``: its path and whether the cursor is on the key or
        in the value. A position between entries of a mapping gives that mapping's path. None
        when the document has no content."""
        if self.root is None:
            return None
        idx = self.lines.index(position) - self._base
        path: YamlPath = ()
        node = self.root
        shift = 0  # idx is in the coordinates of ``node``'s children: document index - shift
        while node.kind != "scalar":
            hit = _child_at(node, idx, self._parse_text, shift)
            if hit is None:
                break
            part, slot, on_key = hit
            path = (*path, part)
            if on_key:
                return path, "key"
            if slot.is_alias:
                break
            node = slot.node
            idx -= slot.base
            shift += slot.base
        return path, "value"

    def paths(self) -> Iterator[YamlPath]:
        """Every path of the document in document order (aliases are not entered)."""
        if self.root is None:
            return
        stack: list[tuple[YamlPath, Node]] = [((), self.root)]
        while stack:
            path, node = stack.pop()
            yield path
            if node.children is None:
                continue
            items = node.children.items() if isinstance(node.children, dict) else enumerate(node.children)
            for part, slot in reversed(list(items)):
                if slot.is_alias:
                    yield (*path, part)
                else:
                    stack.append(((*path, part), slot.node))

    def range_of(self, path: YamlPath, at: str = "value", span: tuple[int, int] | None = None) -> Range:
        """The range a :class:`Finding` located by ``path``/``at``/``span`` points at."""
        if at == "key":
            return self.key_range(path)
        if span is not None:
            return self.span_range(path, span[0], span[1])
        return self.value_range(path)

    def index_range(self, start: int, end: int) -> Range:
        """The range of parse-text indices ``[start, end)`` (libyaml mark indices)."""
        return self._range(start, end)

    # helpers

    def _walk(self, path: YamlPath) -> tuple[Slot | None, int]:
        """The slot at ``path`` or at its deepest existing ancestor, and how many parts matched
        (None and 0 for the root, which has no slot)."""
        slot, depth, _ = self._locate(path)
        return slot, depth

    def _locate(self, path: YamlPath) -> tuple[Slot | None, int, int]:
        """:meth:`_walk`, plus the offset to add to the slot's positions (non-zero below a
        chunk-relative subtree)."""
        if self.root is None:
            return None, 0, 0
        slot: Slot | None = None
        node = self.root
        depth = 0
        at = inner = 0
        for part in path:
            children = node.children
            if children is None:
                break
            if isinstance(children, dict):
                nxt = children.get(part) if isinstance(part, str) else None
            elif isinstance(part, int) and not isinstance(part, bool) and 0 <= part < len(children):
                nxt = children[part]
            else:
                nxt = None
            if nxt is None:
                break
            slot, node, depth = nxt, nxt.node, depth + 1
            at = inner
            inner += nxt.base
        if slot is None:
            slot = Slot(None, -1, -1, self.root, self.root.start, self.root.end)
        return slot, depth, at

    def _first_key_range(self, node: Node | None, shift: int) -> Range | None:
        if node is not None and isinstance(node.children, dict) and node.children:
            first = next(iter(node.children.values()))
            return self._range(first.key_start + shift, first.key_end + shift)
        return None

    def _root_range(self) -> Range:
        if self.root is None:
            return self.lines.range(0, 0)
        return self._range(self.root.start, self.root.end)

    def _range(self, start: int, end: int) -> Range:
        return self.lines.range(start + self._base, end + self._base)

    def _chars(self, node: Node, shift: int = 0) -> CharSources:
        """Where each decoded character of a scalar came from, as document indices."""
        if shift == 0:
            if node._chars is None:
                node._chars = char_sources(self._parse_text, node.start, node.extent, node.style, node.text or "")
            return node._chars
        # a shared, chunk-relative node: remember the answer in this map only
        found = self._shifted_chars.get(id(node))
        if found is None or found[0] is not node or found[1] != shift:
            chars = char_sources(self._parse_text, node.start + shift, node.extent + shift, node.style, node.text or "")
            found = self._shifted_chars[id(node)] = (node, shift, chars)
        return found[2]


def _child_at(node: Node, idx: int, src: str, shift: int = 0) -> tuple[str | int, Slot, bool] | None:
    """The entry of ``node`` at ``idx`` (in the coordinates of ``node``'s children, which are
    document indices minus ``shift``)."""
    items = node.children.items() if isinstance(node.children, dict) else enumerate(node.children)
    for part, slot in items:
        if slot.key is not None and slot.key_start <= idx <= slot.key_end:
            return part, slot, True
        child = slot.node
        if slot.is_alias or child.kind == "scalar":
            end = slot.end
            if end == slot.start and not slot.is_alias:  # an empty value: the blanks after `key:`
                while end + shift < len(src) and src[end + shift] in " \t":
                    end += 1
            if slot.start <= idx <= end:
                return part, slot, False
        elif child.start + slot.base <= idx < max(child.extent, child.end + 1) + slot.base:
            return part, slot, False
    return None
