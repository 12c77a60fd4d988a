"""Long documents parsed piecewise, each item cached by its text, assembled as one parse.

An editor re-validates the whole document on every keystroke, and almost all of a long spec
is the block sequences under `steps:`. So the document is split at the top-level items of each
such sequence (by indentation), every item is parsed on its own and cached by its text, and
the rest (the "skeleton", the document with those sequences cut out) is parsed once more. The
pieces are assembled into the same data and source map a full parse gives, with the cached
subtrees kept in chunk-relative positions (Slot.base). Whenever the split is not clearly
valid (anchors or aliases, tags or directives, a second document, CRLF or exotic line breaks,
tabs, any diagnostic in a piece, a piece that does not parse as exactly one item, limits that
would be near), :func:`parse_in_chunks` gives None and the document is parsed whole instead.
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .sourcemap import Node, Slot, SourceMap
from .yamlevents import MAX_DEPTH, MAX_NODES, Composer, ParsedYaml

CHUNKED_MIN_ITEMS = 48  # below this many items, or
CHUNKED_MIN_CHARS = 4096  # this many characters, a whole parse is as fast
_CHUNK_CACHE_SIZE = 8_192  # a 2,000-step spec holds 2,000; a few documents and edits fit
# patterns start with a literal newline so that the regex engine can skip ahead quickly
_STEPS_KEY = re.compile(r"\n( *)steps:[ ]*(?:#[^\n]*)?(?=\n|$)")
_MARKERS = re.compile(r"^(?:---|\.\.\.|%)|^ *\t", re.MULTILINE)
_MARKER_LINE = re.compile(r"\n(?:---|\.\.\.)")  # finds by newline: faster than `"---" in text`


def _risky(text: str) -> bool:
    """Whether ``text`` has what the split does not model: other line breaks than LF, a BOM,
    document markers or directives, tab indentation."""
    if any(ch in text for ch in ("\r", "\x85", "\u2028", "\u2029", "\ufeff")):
        return True
    maybe = "%" in text or "\t" in text or text.startswith(("---", "...")) or _MARKER_LINE.search(text) is not None
    return maybe and _MARKERS.search(text) is not None


@dataclass(frozen=True, slots=True)
class _Item:
    """One sequence item parsed alone, positions relative to its chunk's start."""

    node: Node
    data: Any
    start: int
    end: int
    seq_start: int
    seq_extent: int  # where the sequence closes (only for the last item of a block)
    nodes: int
    deepest: int
    source: str  # the chunk text and lookahead it was parsed from (its cache key)


@dataclass(frozen=True, slots=True)
class _Block:
    """A `steps:` block sequence: the key's line, the indent of its items and their chunks."""

    key_at: int  # index of the `s` of `steps:`
    start: int
    end: int
    indent: int
    chunks: tuple[tuple[int, int], ...]
    after: str  # the first content line after the block ("" at the end of the text)


class _Lru:
    """A bounded mapping that forgets the least recently used entries (each operation is one
    OrderedDict call, so concurrent loads in threads cannot corrupt it)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        found = self.data.get(key)
        if found is not None:
            try:
                self.data.move_to_end(key)
            except KeyError:  # dropped by another thread meanwhile
                pass
        return found

    def put(self, key: Any, value: Any) -> Any:
        self.data[key] = value
        while len(self.data) > self.size:
            try:
                self.data.popitem(last=False)
            except KeyError:
                break
        return value

    def clear(self) -> None:
        self.data.clear()


_CHUNKS = _Lru(_CHUNK_CACHE_SIZE)
_SKELETONS = _Lru(64)
_INVALID = object()


def clear_chunk_cache() -> None:
    """Forget every cached chunk and skeleton parse."""
    _CHUNKS.clear()
    _SKELETONS.clear()


def parse_in_chunks(text: str) -> ParsedYaml | None:
    """The document parsed piecewise (see above), or None to parse it whole."""
    if len(text) < CHUNKED_MIN_CHARS or _risky(text):
        return None
    blocks = _blocks(text)
    if sum(len(b.chunks) for b in blocks) < CHUNKED_MIN_ITEMS:
        return None
    items = [[_chunk(text, b, i) for i in range(len(b.chunks))] for b in blocks]
    if any(item is None for block in items for item in block):
        return None
    skeleton, pieces = _skeleton(text, blocks)
    parsed = _SKELETONS.get(skeleton)
    if parsed is None:
        parsed = _SKELETONS.put(skeleton, _parse_skeleton(skeleton))
    if parsed is _INVALID:
        return None
    return _assemble(text, parsed, pieces, blocks, items)  # type: ignore[arg-type]


def _blocks(text: str) -> list[_Block]:
    """The `steps:` block sequences of ``text`` that are not inside another one."""
    blocks: list[_Block] = []
    for match in _steps_keys(text):
        if blocks and match.start() + 1 < blocks[-1].end:
            continue  # inside the previous block (a fanout's stages, a block scalar's text)
        block = _block(text, match.end() + 1, len(match.group(1)), match.start(1) + len(match.group(1)))
        if block is not None:
            blocks.append(block)
    return blocks


def _steps_keys(text: str) -> Iterator[re.Match[str]]:
    """What ``_STEPS_KEY.finditer(text)`` finds, found from the few places where `steps:`
    occurs (a regex trying every line of a long document is slower)."""
    end = 0
    at = text.find("steps:")
    while at >= 0:
        line = text.rfind("\n", 0, at)
        if line >= end and not text[line + 1: at].strip(" "):
            match = _STEPS_KEY.match(text, line)
            if match is not None:
                yield match
                end = match.end()
        at = text.find("steps:", at + 6)


def _block(text: str, start: int, key_indent: int, key_at: int) -> _Block | None:
    """The block sequence whose lines begin at ``start`` (just after a `steps:` line)."""
    if start > len(text):
        return None
    first = _FIRST_CONTENT.search(text, start)
    if first is None:
        return None
    indent = len(first.group(1))
    dash = first.end(1)
    if indent <= key_indent or not (text.startswith(("- ", "-\n"), dash) or text[dash:] == "-"):
        return None
    ends, items = _patterns(indent)
    stop = ends.search(text, first.end())
    end = stop.start() + 1 if stop is not None else len(text)
    starts = [start, *(m.start() + 1 for m in items.finditer(text, first.end(), end))]
    bounds = tuple(zip(starts, [*starts[1:], end]))
    after = ""
    if stop is not None:
        newline = text.find("\n", end)
        after = text[end: newline + 1] if newline >= 0 else text[end:]
    return _Block(key_at, start, end, indent, bounds, after)


_FIRST_CONTENT = re.compile(r"^( *)[^ #\n]", re.MULTILINE)


@lru_cache(maxsize=64)
def _patterns(indent: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(the first line that ends a block of items at ``indent``, each item's first line)."""
    ends = re.compile(rf"\n(?: {{0,{indent - 1}}}[^ #\n]| {{{indent}}}(?:[^ #\n-]|-[^ \n]))")
    items = re.compile(rf"\n {{{indent}}}-(?: |\n|$)")
    return ends, items


def _chunk(text: str, block: _Block, index: int) -> _Item | None:
    start, end = block.chunks[index]
    last = index == len(block.chunks) - 1
    if last:
        lookahead = block.after
    else:
        nxt_start, nxt_end = block.chunks[index + 1]
        newline = text.find("\n", nxt_start, nxt_end)
        lookahead = text[nxt_start: newline + 1 if newline >= 0 else nxt_end]
    source = text[start:end] + lookahead
    key = (source, last)
    found = _CHUNKS.get(key)
    if found is None:
        found = _CHUNKS.put(key, _parse_chunk(source, last, end - start))
    return None if found is _INVALID else found


def _parse_chunk(source: str, last: bool, length: int) -> _Item | object:
    """One item (and the lookahead line after it) parsed as a root block sequence."""
    composer = Composer(source)
    composer.stop = "sequence" if last else "item"
    result = composer.run()
    if result.diagnostics or composer.anchors or composer.aliases or composer.chunk_root is None:
        return _INVALID
    seq_node, seq_data = composer.chunk_root
    if len(seq_data) != 1 or seq_node.style != "block":
        return _INVALID
    slot = seq_node.children[0]
    if slot.end > length or not _only_filler(source[slot.end:length]):
        return _INVALID  # the item ran into the lookahead, or text after it was never read
    extent = seq_node.extent if last else -1
    return _Item(slot.node, seq_data[0], slot.start, slot.end, seq_node.start, extent, composer.nodes,
                 composer.deepest, source + ("\x00last" if last else ""))


def _only_filler(text: str) -> bool:
    """Whether ``text`` (the rest of a line, then whole lines) holds only blanks and comments."""
    return all(not line.strip(" ") or line.lstrip(" ").startswith("#") for line in text.split("\n"))


def _skeleton(text: str, blocks: list[_Block]) -> tuple[str, list[tuple[int, int]]]:
    """The text without the blocks, and (skeleton index, text index) where each piece starts."""
    parts, pieces, at, skel = [], [], 0, 0
    for block in blocks:
        parts.append(text[at: block.start])
        pieces.append((skel, at))
        skel += block.start - at
        at = block.end
    parts.append(text[at:])
    pieces.append((skel, at))
    return "".join(parts), pieces


def _parse_skeleton(skeleton: str) -> ParsedYaml | object:
    composer = Composer(skeleton)
    result = composer.run()
    if result.diagnostics or result.data is None or composer.anchors or composer.aliases:
        return _INVALID
    return result


def _assemble(text: str, skeleton: ParsedYaml, pieces: list[tuple[int, int]], blocks: list[_Block],
              items: list[list[_Item]]) -> ParsedYaml | None:
    """Skeleton and items put together as a full parse of ``text`` would have them."""
    skel_starts = [p[0] for p in pieces]

    def to_text(index: int) -> int:
        k = bisect.bisect_right(skel_starts, index) - 1
        return index - pieces[k][0] + pieces[k][1]

    keys = {block.key_at: (block, block_items) for block, block_items in zip(blocks, items)}
    total = [0]
    root, data = _rebuild(skeleton.source_map.root, skeleton.data, to_text, keys, total, 0)  # type: ignore[arg-type]
    if root is None or keys or 2 * total[0] > MAX_NODES:
        return None
    sources = {id(item.data): item.source for block_items in items for item in block_items
               if item.data.__class__ is dict}
    return ParsedYaml(data, SourceMap(text, root, 0), [], text, sources)


def _rebuild(node: Node, data: Any, to_text, keys: dict, total: list[int], depth: int) -> tuple[Node | None, Any]:
    """A copy of a skeleton subtree in text positions, with each cut-out block put back (and
    removed from ``keys``). None when a block's key is not where the split expected it."""
    copy = Node(node.kind, to_text(node.start), to_text(node.end), node.style, node.text)
    copy.extent = to_text(node.extent)
    total[0] += 1
    if node.kind == "scalar":
        return copy, data
    if node.kind == "seq":
        out_list = []
        for slot, value in zip(node.children, data):
            child, value = _rebuild(slot.node, value, to_text, keys, total, depth + 1)
            if child is None:
                return None, None
            copy.children.append(Slot(None, -1, -1, child, child.start, child.end))  # no aliases here
            out_list.append(value)
        copy.end = max((s.end for s in copy.children), default=copy.start) if copy.style == "block" else copy.end
        return copy, out_list
    out: dict[str, Any] = {}
    for name, slot in node.children.items():
        key_at = to_text(slot.key_start)
        found = keys.pop(key_at, None) if name == "steps" else None
        if found is not None:
            new_slot = _block_slot(found, slot, key_at, to_text, node, depth + 1, total)
            if new_slot is None:
                return None, None
            copy.children[name] = new_slot[0]
            out[name] = new_slot[1]
            continue
        child, value = _rebuild(slot.node, data[name], to_text, keys, total, depth + 1)
        if child is None:
            return None, None
        copy.children[name] = Slot(name, key_at, to_text(slot.key_end), child, child.start, child.end)
        out[name] = value
    if copy.style == "block":
        copy.end = max((s.end for s in copy.children.values()), default=copy.start)
        copy.extent = max(copy.extent, copy.end)
    return copy, out


def _block_slot(found, old: Slot, key_at: int, to_text, parent: Node, depth: int, total: list[int]):
    block, block_items = found
    value = old.node
    if parent.style != "block" or value.kind != "scalar" or value.style or value.text != "":
        return None
    seq = Node("seq", block.chunks[0][0] + block_items[0].seq_start)
    seq.style = "block"
    values = []
    for (start, _), item in zip(block.chunks, block_items):
        if depth + item.deepest >= MAX_DEPTH:
            return None
        seq.children.append(Slot(None, -1, -1, item.node, start + item.start, start + item.end, start))
        values.append(item.data)
        total[0] += item.nodes
    last_start = block.chunks[-1][0]
    seq.end = seq.children[-1].end
    seq.extent = max(last_start + block_items[-1].seq_extent, seq.end)
    total[0] += 1
    return Slot("steps", key_at, to_text(old.key_end), seq, seq.start, seq.end), values
