"""YAML text -> plain data, a source map with exact positions, and document diagnostics.

:func:`parse_yaml` drives libyaml's event parser (``yaml._yaml.CParser``; PyYAML's pure-Python
parser when libyaml is missing) and composes the data itself, one event at a time, so that it
controls everything a spec loader must bound or reject: duplicate keys (LG104), a second document
(LG105), alias counts and alias expansion (LG106), nesting depth (LG107, checked as collections
open, so a 10,000-deep ``[[[[`` stops after 65 events and nothing recurses), document size (LG101,
checked before parsing), text that is not UTF-8 or holds NUL or control characters (LG102), an
empty document (LG108) and tags or non-string keys (LG109). Syntax errors become LG103 with a
message written for people. It never raises and never hangs.

Scalars resolve as ``yaml.safe_load`` resolves them (YAML 1.1 core types via PyYAML's own
resolver table), except that timestamps stay strings: a spec is JSON data.

The :class:`SourceMap` is built during the same pass: each value knows its source interval, each
mapping entry its key interval, and string values can map character offsets inside the decoded
text back to the document (:mod:`lockgate.dsl.scalars`).
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from functools import lru_cache
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from yaml.nodes import ScalarNode

from .diagnostics import Diagnostic, Position, Range, Related, Severity, YamlPath
from .scalars import CharSources, char_sources
from .yamlerrors import explain_syntax_error

try:  # libyaml; the pure-Python parser has the same event API, only slower
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    _Parser = yaml.SafeLoader  # type: ignore[assignment,misc]

MAX_DOCUMENT_CHARS = 10 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 1_000
MAX_ALIAS_EXPANSION = 100_000
MAX_NODES = 250_000

_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_NEWLINES = re.compile(r"\r\n|\r|\n")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)$")
_MISS = object()
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


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


# -- parsing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedYaml:
    """The result of :func:`parse_yaml`. ``data`` is None when the document could not be read
    (it may still hold data alongside non-fatal diagnostics such as duplicate keys)."""

    data: Any
    source_map: SourceMap
    diagnostics: list[Diagnostic] = field(default_factory=list)
    text: str = ""
    # for a document parsed in chunks: id() of each item mapping -> the text it was parsed
    # from (content that determines it), so later passes can reuse their work per item
    item_sources: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


class _Stop(Exception):
    """Abandon composition: a limit was hit and a diagnostic was recorded."""


class _SecondDocument(Exception):
    """Stop reading at a second document; the first one stays usable."""


def parse_yaml(text: str | bytes) -> ParsedYaml:
    """Parse one YAML document into plain data plus a :class:`SourceMap`; never raises."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        if len(raw) > MAX_DOCUMENT_CHARS:
            return _refused("", _too_large(len(raw), "bytes"))
        decoded, problem = _decode(raw)
        if problem is not None:
            return _refused(decoded, problem)
        text = decoded
    elif not isinstance(text, str):
        return _refused("", _diag("LG102", f"expected text, got {type(text).__name__}", Range.of(0, 0, 0, 0)))
    if len(text) > MAX_DOCUMENT_CHARS:
        return _refused("", _too_large(len(text), "characters"))
    bad = _CONTROL.search(text)
    if bad is not None:
        lines = LineIndex(text)
        ch = bad.group()
        what = "a NUL character" if ch == "\0" else f"the control character U+{ord(ch):04X}"
        return _refused(text, _diag("LG102", f"the document contains {what}; a spec must be plain text",
                                    lines.range(bad.start(), bad.start() + 1)))
    try:
        return _parse_in_chunks(text) or _Composer(text).run()
    except Exception as exc:  # a last line of defence: report, never raise
        return _refused(text, _diag("LG103", f"the YAML could not be read: {exc}", Range.of(0, 0, 0, 0)))


def _decode(raw: bytes) -> tuple[str, Diagnostic | None]:
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        prefix = raw[: exc.start].decode("utf-8", errors="replace") if exc.start else ""
        lines = LineIndex(prefix)
        at = lines.position(len(prefix))
        msg = f"the document is not UTF-8 text (invalid byte 0x{raw[start]:02X} at byte {start})"
        return prefix, _diag("LG102", msg, Range(at, Position(at.line, at.character + 1)))


def _too_large(size: int, unit: str) -> Diagnostic:
    limit = MAX_DOCUMENT_CHARS // (1024 * 1024)
    return _diag("LG101", f"the document is {size:,} {unit}; specs are limited to {limit} MB", Range.of(0, 0, 0, 0))


def _refused(text: str, diag: Diagnostic) -> ParsedYaml:
    return ParsedYaml(None, SourceMap(text), [diag], text)


def _diag(code: str, message: str, rng: Range, *, hint: str | None = None,
          related: tuple[Related, ...] = (), path: YamlPath = ()) -> Diagnostic:
    from .codes import lookup

    entry = lookup(code)
    return Diagnostic(code, message, rng, Severity.ERROR, entry.name, hint, related, None, path)


class _Frame:
    """An open collection during composition."""

    __slots__ = ("node", "data", "anchor", "key", "merges")

    def __init__(self, node: Node, data: Any, anchor: str | None) -> None:
        self.node = node
        self.data = data
        self.anchor = anchor
        # for mappings: the pending key as (text, start, end, is_merge), or _BAD_KEY, or None
        self.key: Any = None
        self.merges: list[tuple[Slot, Any]] = []


_BAD_KEY = object()


class _Composer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.base = 1 if text.startswith("\ufeff") else 0
        self.src = text[self.base :]
        self.map = SourceMap(text, None, self.base)
        self.diags: list[Diagnostic] = []
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Node, Any]] = {}
        self.open_anchors: set[str] = set()
        self.aliases = 0
        self.expansion = 0
        self.root: tuple[Node, Any] | None = None
        self.plain: dict[str, Any] = {}  # plain scalar text -> resolved value
        self.nodes = 0
        self.documents = 0
        self.stop: str | None = None  # chunk mode: "item" or "sequence" (see _parse_chunk)
        self.chunk_root: tuple[Node, Any] | None = None
        self.deepest = 0
        self.item_end = -1

    def run(self) -> ParsedYaml:
        parser = _Parser(self.src)
        fatal = False
        try:
            self._events(parser)
        except _SecondDocument:
            pass
        except _Stop:
            fatal = True
        except yaml.reader.ReaderError as exc:
            self.diags.append(self._reader_error(exc))
            fatal = True
        except yaml.MarkedYAMLError as exc:
            self.diags.append(self._syntax_error(exc))
            fatal = True
        except RecursionError:
            self.diags.append(self._at("LG107", "the document nests too deeply to read", 0, 0))
            fatal = True
        finally:
            dispose = getattr(parser, "dispose", None)
            if dispose is not None:
                dispose()
        if self.stop is not None and not fatal:
            return ParsedYaml(None, self.map, self.diags, self.text)
        if fatal or self.root is None:
            if not fatal:
                self.diags.append(self._at("LG108", "the document is empty; a spec starts with `version: 1`", 0, 0))
            return ParsedYaml(None, SourceMap(self.text, None, self.base), self.diags, self.text)
        node, data = self.root
        self.map.root = node
        if data is None:
            self.diags.append(self._at("LG108", "the document is empty; a spec starts with `version: 1`",
                                       node.start, node.end))
            return ParsedYaml(None, self.map, self.diags, self.text)
        return ParsedYaml(data, self.map, self.diags, self.text)

    # events

    def _events(self, parser: Any) -> None:
        if self.stop is not None:
            return self._chunk_events(parser)
        get = parser.get_event
        scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
        map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
        map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
        while True:
            ev = get()
            kind = type(ev)
            if kind is scalar:
                self._scalar(ev)
            elif kind is map_start or kind is seq_start:
                self._open(ev, "map" if kind is map_start else "seq")
            elif kind is map_end or kind is seq_end:
                self._close(ev)
            elif kind is alias:
                self._alias(ev)
            elif kind is yaml.DocumentStartEvent:
                self.documents += 1
                if self.documents > 1:
                    self._second_document(ev)
            elif kind is yaml.StreamEndEvent:
                return

    def _chunk_events(self, parser: Any) -> None:
        """Events of a chunk: its root sequence's first item, then (``stop == "sequence"``)
        the sequence's end; what follows is the next piece's lookahead and is not read."""
        get = parser.get_event
        scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
        map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
        map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
        self.chunk_root = None
        while True:
            ev = get()
            kind = type(ev)
            if kind is scalar:
                self._scalar(ev)
            elif kind is map_start or kind is seq_start:
                self.deepest = max(self.deepest, len(self.stack))
                self._open(ev, "map" if kind is map_start else "seq")
            elif kind is map_end or kind is seq_end:
                self._close(ev)
            elif kind is alias:
                self._alias(ev)
            elif kind is yaml.StreamEndEvent or kind is yaml.DocumentEndEvent:
                return
            if len(self.stack) == 1 and self.stack[0].node.kind == "seq" and len(self.stack[0].data) == 1:
                if self.item_end < 0:
                    self.item_end = self.stack[0].node.children[0].end
                if self.stop == "item":
                    self.chunk_root = (self.stack[0].node, self.stack[0].data)
                    return
            if not self.stack and self.root is not None:
                self.chunk_root = self.root
                return

    def _second_document(self, ev: Any) -> None:
        start, end = ev.start_mark.index, ev.end_mark.index
        if end <= start:
            end = start + len(self.src[start:].split("\n", 1)[0])
        self.diags.append(self._at(
            "LG105", "a spec file holds exactly one YAML document; this starts a second one",
            start, end, hint="remove the `---` line and what follows, or split the file"))
        raise _SecondDocument

    def _scalar(self, ev: Any) -> None:
        self._count(ev)
        start, end = ev.start_mark.index, ev.end_mark.index
        style = ev.style or ""
        text: str = ev.value
        node = Node("scalar", start, end, style, text)
        if style in ("|", ">"):
            node.end = _tight_end(self.src, start, end)
        tag = ev.tag
        if tag is not None and tag != "!":
            value = self._tagged(tag, text, node)
        elif style or not ev.implicit[0]:
            value = text
        else:
            value = self.plain.get(text, _MISS)
            if value is _MISS:
                value = self.plain[text] = self._implicit(text, node)
        if self.stack and ev.anchor is None and value.__class__ is str:
            frame = self.stack[-1]
            if frame.key is None and frame.data.__class__ is dict and (style or value != "<<"):
                frame.key = (value, start, node.end, False)  # the hot path: a mapping key
                frame.node.size += 1
                return
        self._add(node, value, ev.anchor, start, node.end)

    def _count(self, ev: Any) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            idx = ev.start_mark.index
            self.diags.append(self._at("LG101", f"the document has more than {MAX_NODES:,} values; "
                                       "specs are limited to that", idx, idx + 1))
            raise _Stop

    def _tagged(self, tag: str, text: str, node: Node) -> Any:
        if tag not in _ALLOWED_TAGS:
            self._unsupported_tag(tag, node)
            return text
        return self._construct(tag, text, node)

    def _implicit(self, text: str, node: Node) -> Any:
        """A plain scalar resolved as yaml.safe_load does (YAML 1.1 core types)."""
        if text == "":
            return None
        if _DECIMAL.match(text):
            return int(text)
        for res_tag, regexp in _RESOLVERS.get(text[0], ()):
            if regexp.match(text):
                return self._construct(res_tag, text, node)
        return text

    def _construct(self, tag: str, value: str, node: Node) -> Any:
        name = tag[len(_TAG):] if tag.startswith(_TAG) else tag
        try:
            if name == "null":
                return None
            if name == "bool":
                return _CONSTRUCTOR.construct_yaml_bool(ScalarNode(tag, value))
            if name == "int":
                return _CONSTRUCTOR.construct_yaml_int(ScalarNode(tag, value))
            if name == "float":
                return _CONSTRUCTOR.construct_yaml_float(ScalarNode(tag, value))
        except (ValueError, KeyError, yaml.YAMLError):
            self.diags.append(self._at("LG109", f"`{value}` cannot be read as !!{name}", node.start, node.end))
        return value  # str, timestamps (kept as text), merge/value markers

    def _unsupported_tag(self, tag: str, node: Node) -> None:
        shown = "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag
        self.diags.append(self._at(
            "LG109", f"the tag `{shown}` is not supported in a spec; write plain values",
            node.start, node.end))

    def _open(self, ev: Any, kind: str) -> None:
        self._count(ev)
        if len(self.stack) >= MAX_DEPTH:
            idx = ev.start_mark.index
            self.diags.append(self._at(
                "LG107", f"the document nests deeper than {MAX_DEPTH} levels", idx, idx + 1))
            raise _Stop
        node = Node(kind, ev.start_mark.index)
        node.style = "flow" if ev.flow_style else "block"
        if ev.tag is not None and ev.tag not in _ALLOWED_TAGS and ev.tag != "!":
            self._unsupported_tag(ev.tag, node)
        if ev.anchor is not None:
            self.open_anchors.add(ev.anchor)
        self.stack.append(_Frame(node, {} if kind == "map" else [], ev.anchor))

    def _close(self, ev: Any) -> None:
        frame = self.stack.pop()
        node = frame.node
        if frame.merges:
            self._apply_merges(frame)
        if node.style == "flow":
            node.end = node.extent = ev.end_mark.index
        else:
            children = node.children.values() if isinstance(node.children, dict) else node.children
            node.end = max((slot.end for slot in children), default=node.start)
            node.extent = max(ev.start_mark.index, node.end)
        if frame.anchor is not None:
            self.open_anchors.discard(frame.anchor)
        self._add(node, frame.data, frame.anchor, node.start, node.end, closing=True)

    def _alias(self, ev: Any) -> None:
        start, end = ev.start_mark.index, ev.end_mark.index
        name = ev.anchor
        self.aliases += 1
        if self.aliases > MAX_ALIASES:
            self.diags.append(self._at("LG106", f"more than {MAX_ALIASES} aliases", start, end))
            raise _Stop
        if name in self.open_anchors:
            self.diags.append(self._at("LG106", f"the alias *{name} refers to a node that contains it",
                                       start, end))
            raise _Stop
        target = self.anchors.get(name)
        if target is None:
            self.diags.append(self._at("LG103", f"unknown alias *{name}: no anchor &{name} before it",
                                       start, end))
            raise _Stop
        node, data = target
        self.expansion += node.size
        if self.expansion > MAX_ALIAS_EXPANSION:
            self.diags.append(self._at(
                "LG106", f"aliases expand to more than {MAX_ALIAS_EXPANSION:,} nodes", start, end,
                hint="an alias bomb (\"billion laughs\") or an unreasonably shared document"))
            raise _Stop
        self._add(node, data, None, start, end, alias=True)

    def _add(self, node: Node, data: Any, anchor: str | None, start: int, end: int,
             *, closing: bool = False, alias: bool = False) -> None:
        if anchor is not None and not alias:
            self.anchors[anchor] = (node, data)
        if not self.stack:
            self.root = (node, data)
            return
        frame = self.stack[-1]
        frame.node.size += node.size
        if frame.node.kind == "seq":
            assert isinstance(frame.data, list) and isinstance(frame.node.children, list)
            frame.data.append(data)
            frame.node.children.append(Slot(None, -1, -1, node, start, end))
            return
        if frame.key is None:
            frame.key = self._key(node, data, start, end, alias)
            return
        key, frame.key = frame.key, None
        if key is _BAD_KEY:
            return
        text, k_start, k_end, is_merge = key
        slot = Slot(text, k_start, k_end, node, start, end)
        if is_merge:
            frame.merges.append((slot, data))
            return
        self._set(frame, slot, data)

    def _key(self, node: Node, data: Any, start: int, end: int, alias: bool) -> Any:
        if node.kind != "scalar" or alias:
            what = "an alias" if alias else ("a mapping" if node.kind == "map" else "a list")
            hint = "if this is text, quote it"
            if node.kind == "map" and node.style == "flow":
                hint = "`{...}` is a YAML mapping; references are written ${...}, and text is quoted"
            self.diags.append(self._at(
                "LG109", f"a key must be a plain string, not {what}", start, end, hint=hint))
            return _BAD_KEY
        if data == "<<" and not node.style:
            return ("<<", start, end, True)
        if not isinstance(data, str):
            shown = "null" if data is None else repr(data).lower() if isinstance(data, bool) else repr(data)
            self.diags.append(self._at(
                "LG109", f"the key `{node.text}` is read as {type(data).__name__} {shown}; keys must be strings",
                start, end, hint=f"quote it: \"{node.text}\""))
            return _BAD_KEY
        return (data, start, end, False)

    def _set(self, frame: _Frame, slot: Slot, data: Any) -> None:
        children = frame.node.children
        assert isinstance(children, dict)
        key = slot.key
        assert key is not None
        first = children.get(key)
        if first is not None:
            self.diags.append(self._at(
                "LG104", f"duplicate key `{key}`: it is already defined on line "
                f"{self.map.index_range(first.key_start, first.key_start).start.line + 1}",
                slot.key_start, slot.key_end,
                related=(Related(self.map.index_range(first.key_start, first.key_end), "first defined here"),)))
            del children[key]  # the later entry wins, as in yaml.safe_load
        children[key] = slot
        frame.data[key] = data

    def _apply_merges(self, frame: _Frame) -> None:
        """YAML 1.1 merge keys (``<<: *base``): explicit keys win, then earlier sources."""
        children = frame.node.children
        assert isinstance(children, dict)
        explicit = set(children)
        for slot, data in frame.merges:
            sources = [(slot.node, data)]
            if slot.node.kind == "seq":
                sources = [(s.node, d) for s, d in zip(slot.node.children, data)]  # type: ignore[arg-type]
            for src, src_data in sources:
                if src.kind != "map" or not isinstance(src_data, dict):
                    self.diags.append(self._at(
                        "LG109", "a merge key `<<` needs a mapping or a list of mappings",
                        slot.start, slot.end))
                    continue
                assert isinstance(src.children, dict)
                for key, child in src.children.items():
                    if key in explicit or key in frame.data:
                        continue
                    frame.data[key] = src_data[key]
                    children[key] = child

    # diagnostics

    def _at(self, code: str, message: str, start: int, end: int, *, hint: str | None = None,
            related: tuple[Related, ...] = ()) -> Diagnostic:
        return _diag(code, message, self.map.index_range(start, max(start, end)), hint=hint, related=related)

    def _reader_error(self, exc: yaml.reader.ReaderError) -> Diagnostic:
        pos = getattr(exc, "position", 0) or 0
        char = getattr(exc, "character", "?")
        code_point = char if isinstance(char, int) else ord(char) if isinstance(char, str) and char else 0
        return self._at("LG102", f"the document contains the character U+{code_point:04X}, which YAML does "
                        "not allow", pos, pos + 1)

    def _syntax_error(self, exc: yaml.MarkedYAMLError) -> Diagnostic:
        message, hint, start, end, related = explain_syntax_error(exc, self.src)
        rel = tuple(Related(self.map.index_range(s, e), m) for s, e, m in related)
        return self._at("LG103", message, start, end, hint=hint, related=rel)


def _tight_end(src: str, start: int, end: int) -> int:
    while end > start and src[end - 1] in " \t\r\n":
        end -= 1
    return end


# -- parsing in chunks ------------------------------------------------------------------------
#
# An editor re-validates the whole document on every keystroke, and almost all of a long spec
# is the block sequences under `steps:`. So the document is split at the top-level items of each
# such sequence (by indentation), every item is parsed on its own and cached by its text, and
# the rest (the "skeleton", the document with those sequences cut out) is parsed once more. The
# pieces are assembled into the same data and source map a full parse gives, with the cached
# subtrees kept in chunk-relative positions (Slot.base). Whenever the split is not clearly
# valid (anchors or aliases, tags of directives, a second document, CRLF or exotic line breaks,
# tabs, any diagnostic in a piece, a piece that does not parse as exactly one item, limits that
# would be near), the document is parsed whole instead.

CHUNKED_MIN_ITEMS = 48  # below this many items, or
CHUNKED_MIN_CHARS = 4096  # this many characters, a whole parse is as fast
_CHUNK_CACHE_SIZE = 8_192  # a 2,000-step spec holds 2,000; a few documents and edits fit
# patterns start with a literal newline so that the regex engine can skip ahead quickly
_STEPS_KEY = re.compile(r"\n( *)steps:[ ]*(?:#[^\n]*)?(?=\n|$)")
_MARKERS = re.compile(r"^(?:---|\.\.\.|%)|^ *\t", re.MULTILINE)


def _risky(text: str) -> bool:
    """Whether ``text`` has what the split does not model: other line breaks than LF, a BOM,
    document markers or directives, tab indentation."""
    if any(ch in text for ch in ("\r", "\x85", "\u2028", "\u2029", "\ufeff")):
        return True
    return ("---" in text or "..." in text or "%" in text or "\t" in text) and _MARKERS.search(text) is not None


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


def _parse_in_chunks(text: str) -> ParsedYaml | None:
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
    for match in _STEPS_KEY.finditer(text):
        if blocks and match.start() + 1 < blocks[-1].end:
            continue  # inside the previous block (a fanout's stages, a block scalar's text)
        block = _block(text, match.end() + 1, len(match.group(1)), match.start(1) + len(match.group(1)))
        if block is not None:
            blocks.append(block)
    return blocks


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
    composer = _Composer(source)
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
    composer = _Composer(skeleton)
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
