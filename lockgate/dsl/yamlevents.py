"""The libyaml event stream composed into plain data and a source map, within limits.

:class:`Composer` drives libyaml's event parser (``yaml._yaml.CParser``; PyYAML's pure-Python
parser when libyaml is missing) and composes the data itself, one event at a time, so that it
controls everything a spec loader must bound or reject: duplicate keys (LG104), a second document
(LG105), alias counts and alias expansion (LG106), nesting depth (LG107, checked as collections
open, so a 10,000-deep ``[[[[`` stops after 65 events and nothing recurses), the number of values
(LG101), tags or non-string keys (LG109) and an empty document (LG108). Syntax errors become LG103
with a message written for people.

Scalars resolve as ``yaml.safe_load`` resolves them (YAML 1.1 core types via PyYAML's own
resolver table), except that timestamps stay strings: a spec is JSON data. The
:class:`~lockgate.dsl.sourcemap.SourceMap` is built during the same pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from .diagnostics import Diagnostic, Range, Related, Severity, YamlPath
from .sourcemap import Node, Slot, SourceMap
from .yamlerrors import explain_syntax_error

try:  # libyaml; the pure-Python parser has the same event API, only slower
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    _Parser = yaml.SafeLoader  # type: ignore[assignment,misc]

MAX_DOCUMENT_CHARS = 10 * 1024 * 1024
#: The largest protocol message read (a language server frame, an MCP request line), in bytes:
#: JSON may spell a character in up to six bytes, so a message carrying the largest spec fits.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 1_000
MAX_ALIAS_EXPANSION = 100_000
MAX_NODES = 250_000

_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)$")
_MISS = object()


@dataclass(frozen=True)
class ParsedYaml:
    """The result of :func:`lockgate.dsl.yamlsrc.parse_yaml`. ``data`` is None when the document
    could not be read (it may still hold data alongside non-fatal diagnostics such as duplicate
    keys)."""

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


def error_diagnostic(code: str, message: str, rng: Range, *, hint: str | None = None,
                     related: tuple[Related, ...] = (), path: YamlPath = ()) -> Diagnostic:
    """An error-severity diagnostic with ``code``'s catalogue name."""
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


class Composer:
    """One pass over the event stream of ``text``: :meth:`run` gives the :class:`ParsedYaml`.

    With ``stop`` set (by :mod:`lockgate.dsl.yamlchunks`) it reads one item of a root block
    sequence instead of a whole document and leaves it in ``chunk_root``.
    """


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
        self.stop: str | None = None  # chunk mode: "item" or "sequence" (see yamlchunks)
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
        written, end = ev.start_mark.index, ev.end_mark.index  # written: where its properties start
        start = written
        if ev.anchor is not None or ev.tag is not None:
            start = _properties(self.src, written, end)[1]
        style = ev.style or ""
        text: str = ev.value
        node = Node("scalar", start, end, style, text)
        if style in ("|", ">"):
            node.end = _tight_end(self.src, start, end)
        tag = ev.tag
        if tag is not None and tag != "!":
            value = self._tagged(tag, text, node, written)
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

    def _tagged(self, tag: str, text: str, node: Node, written: int) -> Any:
        """``text`` read as ``tag`` says; a problem with it is reported over the tag too (from
        ``written``, where the node's properties start)."""
        if tag not in _ALLOWED_TAGS:
            self._unsupported_tag(tag, written, node.end)
            return text
        return self._construct(tag, text, node, written)

    def _implicit(self, text: str, node: Node) -> Any:
        """A plain scalar resolved as yaml.safe_load does (YAML 1.1 core types)."""
        if text == "":
            return None
        if _DECIMAL.match(text):
            try:
                return int(text)
            except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
                self.diags.append(self._at("LG109", f"`{text[:20]}...` ({len(text):,} digits) is too long to read as "
                                           "a number", node.start, node.end))
                return text
        for res_tag, regexp in _RESOLVERS.get(text[0], ()):
            if regexp.match(text):
                return self._construct(res_tag, text, node)
        return text

    def _construct(self, tag: str, value: str, node: Node, written: int | None = None) -> Any:
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
            shown = value if len(value) <= 40 else f"{value[:20]}... ({len(value):,} characters)"
            start = node.start if written is None else written
            self.diags.append(self._at("LG109", f"`{shown}` cannot be read as !!{name}", start, node.end))
        return value  # str, timestamps (kept as text), merge/value markers

    def _unsupported_tag(self, tag: str, start: int, end: int) -> None:
        shown = "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag
        self.diags.append(self._at(
            "LG109", f"the tag `{shown}` is not supported in a spec; write plain values", start, end))

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
            props_end = _properties(self.src, node.start, ev.end_mark.index)[0]
            self._unsupported_tag(ev.tag, node.start, props_end)  # over its properties
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
        return error_diagnostic(code, message, self.map.index_range(start, max(start, end)), hint=hint,
                                related=related)

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


_PROPERTY_TOKENS = (yaml.AnchorToken, yaml.TagToken)


def _properties(src: str, start: int, end: int) -> tuple[int, int]:
    """Where the properties (anchor, tag) of the node whose event spans ``src[start:end]`` end,
    and where its own content starts.

    libyaml starts an anchored or tagged node's event at its properties (``&o Outt`` spans the
    anchor too), and a range over them would have a fix replace the anchor or tag with the value.
    The scanner reads the properties as the parser just did: either order, verbatim tags
    (``!<tag:yaml.org,2002:str>``, commas and all), comments and line breaks before the content.
    An empty value (``out: &o``) starts, and ends, right after its properties.
    """
    scanner = _Parser(src[start:end])
    props_end = content = 0
    try:
        scanner.get_token()  # the stream's start
        token = scanner.get_token()
        while isinstance(token, _PROPERTY_TOKENS):
            props_end = token.end_mark.index
            token = scanner.get_token()
        content = token.start_mark.index
    except yaml.YAMLError:  # pragma: no cover - the parser has just read this text in context
        pass
    finally:
        scanner.dispose()
    return start + props_end, start + max(props_end, content)


def _tight_end(src: str, start: int, end: int) -> int:
    while end > start and src[end - 1] in " \t\r\n":
        end -= 1
    return end
