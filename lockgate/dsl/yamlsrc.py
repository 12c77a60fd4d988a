"""YAML text -> plain data, a source map with exact positions, and document diagnostics.

:func:`parse_yaml` is the entry point. It refuses what must not reach the parser (a document over
the size limit, LG101; text that is not UTF-8 or holds NUL or control characters, LG102), then
parses: a long document in chunks (:mod:`lockgate.dsl.yamlchunks`), anything else whole, by
composing libyaml's event stream within limits (:mod:`lockgate.dsl.yamlevents`). The result holds
a :class:`SourceMap` (:mod:`lockgate.dsl.sourcemap`). It never raises and never hangs.

The names other modules import from here (the source map, the limits, the result type) are
re-exported so that this stays the one place to import YAML parsing from.
"""

from __future__ import annotations

import re

from .diagnostics import Diagnostic, Position, Range
from .sourcemap import LineIndex, Node, Slot, SourceMap
from .yamlchunks import clear_chunk_cache, parse_in_chunks
from .yamlevents import (
    MAX_ALIAS_EXPANSION,
    MAX_ALIASES,
    MAX_DEPTH,
    MAX_DOCUMENT_CHARS,
    MAX_NODES,
    Composer,
    ParsedYaml,
    error_diagnostic,
)

__all__ = [
    "MAX_ALIASES", "MAX_ALIAS_EXPANSION", "MAX_DEPTH", "MAX_DOCUMENT_CHARS", "MAX_NODES",
    "LineIndex", "Node", "ParsedYaml", "Slot", "SourceMap", "clear_chunk_cache", "parse_yaml",
]

# the parse stages under their former private names, for tests that drive them directly
_Composer = Composer
_parse_in_chunks = parse_in_chunks

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_ASCII_CONTROL = tuple(chr(c) for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F))


def _control(text: str) -> re.Match[str] | None:
    """The first character :data:`_CONTROL` refuses. Plain ASCII text is first looked through
    one character at a time (a substring scan each), much faster than the regex on long text."""
    if text.isascii() and not any(ch in text for ch in _ASCII_CONTROL):
        return None
    return _CONTROL.search(text)


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
        return _refused("", error_diagnostic("LG102", f"expected text, got {type(text).__name__}",
                                             Range.of(0, 0, 0, 0)))
    if len(text) > MAX_DOCUMENT_CHARS:
        return _refused("", _too_large(len(text), "characters"))
    bad = _control(text)
    if bad is not None:
        lines = LineIndex(text)
        ch = bad.group()
        what = _refused_character(ch)
        return _refused(text, error_diagnostic("LG102", f"the document contains {what}; a spec must be plain text",
                                               lines.range(bad.start(), bad.start() + 1)))
    try:
        return parse_in_chunks(text) or Composer(text).run()
    except Exception as exc:  # a last line of defence: report, never raise
        return _refused(text, error_diagnostic("LG103", f"the YAML could not be read: {exc}",
                                               Range.of(0, 0, 0, 0)))


def _refused_character(ch: str) -> str:
    """How an LG102 message names a character :data:`_CONTROL` refuses."""
    if ch == "\0":
        return "a NUL character"
    if "\ud800" <= ch <= "\udfff":  # half of a UTF-16 pair on its own: no character at all
        return f"a lone surrogate (U+{ord(ch):04X}), not valid Unicode"
    return f"the control character U+{ord(ch):04X}"


def _decode(raw: bytes) -> tuple[str, Diagnostic | None]:
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        prefix = raw[: exc.start].decode("utf-8", errors="replace") if exc.start else ""
        lines = LineIndex(prefix)
        at = lines.position(len(prefix))
        msg = f"the document is not UTF-8 text (invalid byte 0x{raw[start]:02X} at byte {start})"
        return prefix, error_diagnostic("LG102", msg, Range(at, Position(at.line, at.character + 1)))


def _too_large(size: int, unit: str) -> Diagnostic:
    limit = MAX_DOCUMENT_CHARS // (1024 * 1024)
    return error_diagnostic("LG101", f"the document is {size:,} {unit}; specs are limited to {limit} MB",
                            Range.of(0, 0, 0, 0))


def _refused(text: str, diag: Diagnostic) -> ParsedYaml:
    return ParsedYaml(None, SourceMap(text), [diag], text)
