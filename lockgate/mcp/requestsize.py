"""The size limit of a request: a line longer than :data:`MAX_REQUEST_BYTES` is never held whole.

The SDK's stdio transport reads each line whole, so a client writing a line of a gigabyte made the
server hold it, parse it and quote it in its answer, until memory ran out (review s13b F4).
:class:`RequestLines` is the stream the transport reads instead: a line up to the limit is handed
on as the transport's own reader would hand it on; a longer one is read on to its end in pieces
and dropped, and the transport gets a stand-in for it which
:func:`lockgate.mcp.unreadable.answering_unreadable` recognises (:meth:`RequestLines.take`) and
answers with the limit. To answer, it needs the request's ``id``, which clients write before
``params`` (the Python SDK) or after them (the TypeScript SDK): :class:`Outline` keeps the top
level of the line as it goes by, nested values and long strings left out.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, NamedTuple

from pydantic import ValidationError

from ..dsl.yamlevents import MAX_MESSAGE_BYTES
from .unreadable import request_key

#: The longest request line read, in bytes (a call carrying the largest spec fits).
MAX_REQUEST_BYTES = MAX_MESSAGE_BYTES

_PIECE = 1024 * 1024  # how much of the rest of an oversized line is read at a time
# Stands in for a dropped line. The lone surrogate makes it text no client can send: lines
# are decoded with errors="replace", which never yields one.
_STAND_IN = "\udc80lockgate: oversized request {}\n"


class Oversized(NamedTuple):
    """A request line dropped for its size."""

    size: int  #: its length in bytes (without the line break)
    key: tuple[int | str, str | None] | None  #: (id, method), as :func:`request_key` gives them


class RequestLines:
    """The lines of a binary stream, for :func:`mcp.server.stdio.stdio_server` to read through
    ``anyio.wrap_file``: each line (up to ``\\n``: MCP messages are newline-delimited) decoded as
    UTF-8, bad bytes replaced as the SDK does; a line longer than ``limit`` bytes replaced by a
    stand-in that :meth:`take` turns back into what is known of it."""

    def __init__(self, stream: BinaryIO, limit: int = MAX_REQUEST_BYTES) -> None:
        self._stream, self.limit = stream, limit
        self._dropped: dict[str, Oversized] = {}
        self._numbers = itertools.count()

    def readline(self) -> str:
        line = self._stream.readline(self.limit + 1)
        if len(line) <= self.limit or line.endswith(b"\n"):
            return line.decode("utf-8", errors="replace")
        return self._drop(line)

    def _drop(self, start: bytes) -> str:
        """Read the rest of the line whose first ``start`` bytes were read; its stand-in."""
        outline = Outline()
        for at in range(0, len(start), _PIECE):
            outline.feed(start[at:at + _PIECE])
        size, piece = len(start), start
        while not piece.endswith(b"\n") and (piece := self._stream.readline(_PIECE)):
            outline.feed(piece)
            size += len(piece)
        size -= piece.endswith(b"\n")
        stand_in = _STAND_IN.format(next(self._numbers))
        self._dropped[stand_in] = Oversized(size, request_key(outline.text()))
        return stand_in

    def take(self, item: Exception) -> Oversized | None:
        """What is known of the dropped line whose stand-in the transport failed to parse as
        ``item``; None for any other item."""
        if isinstance(item, ValidationError):
            for error in item.errors():
                if isinstance(error.get("input"), str) and error["input"] in self._dropped:
                    return self._dropped.pop(error["input"])
        return None


@contextmanager
def wire_stdin() -> Iterator[BinaryIO]:
    """This process's stdin as a file of its own, while fd 0 reads /dev/null: a child process
    inheriting fd 0 (a git hook, say) cannot take requests off the wire. The SDK does as much for
    the stdin it opens itself, not for one it is given. As there, the wire's descriptor is never
    closed: a worker thread may still be reading it when serving ends."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


_TOKEN = re.compile(rb'["{}\[\]]')
# a string's text up to its closing quote or a backslash ending the piece (possessive: memory
# does not grow with the escapes matched)
_STRING_BODY = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
# what a nested value holds up to its next bracket: scalars and whole strings (one left open at
# the end of a piece is read on by Outline._string)
_NESTED = re.compile(rb'[^"{}\[\]]*+(?:"[^"\\]*+(?:\\.[^"\\]*+)*+"[^"{}\[\]]*+)*+', re.DOTALL)


class Outline:
    """The top level of a JSON text fed in pieces of bytes: ``{"method":"tools/call",
    "params":{},"id":5}`` for a request, whatever its params held. Nested objects and arrays
    become empty ones, strings longer than :data:`MAX_STRING` bytes become ``null``; the outline
    stops growing at :data:`MAX_TEXT` bytes and after :data:`MAX_TOKENS` quotes and brackets
    (a line of a billion brackets would take minutes), so what it keeps and the time it takes
    are bounded."""

    MAX_TEXT = 64 * 1024
    MAX_STRING = 1024
    MAX_TOKENS = 1_000_000

    def __init__(self) -> None:
        self.depth = 0
        self.tokens = 0
        self.kept = bytearray()
        self.string: bytearray | None = None  # the string being read, while short and at the top level
        self.in_string = self.escaped = False

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")

    def feed(self, data: bytes) -> None:
        at = 0
        while at < len(data) and self.tokens < self.MAX_TOKENS and len(self.kept) < self.MAX_TEXT:
            if self.in_string:
                at = self._string(data, at)
                continue
            if self.depth > 1:  # inside a nested value: its strings and scalars are skipped at once
                end = _NESTED.match(data, at).end()  # type: ignore[union-attr]  # it matches ""
            else:
                hit = _TOKEN.search(data, at)
                end = len(data) if hit is None else hit.start()
                self._keep(data, at, end)
            if end == len(data):
                return
            self.tokens += 1
            at = end + 1
            char = data[end:at]
            if char == b'"':
                self.in_string = True
                self.string = bytearray() if self.depth <= 1 else None
            elif char in b"{[":
                self.depth += 1
                if self.depth <= 2:
                    self._keep(data, end, at)
            else:
                self.depth -= 1
                if self.depth <= 1:
                    self._keep(data, end, at)

    def _string(self, data: bytes, at: int) -> int:
        """Read on in a string from ``at``; where reading goes on."""
        start = at + self.escaped  # the last piece ended in a backslash: this byte is escaped
        end = _STRING_BODY.match(data, start).end()  # type: ignore[union-attr]  # it matches ""
        closed = end < len(data)  # at the closing quote; else at the end, or before a last backslash
        self.escaped = closed and data[end] == ord("\\")
        closed = closed and not self.escaped
        stop = end + self.escaped
        if self.string is not None:
            if len(self.string) + stop - at <= self.MAX_STRING:
                self.string += data[at:stop]
            else:
                self.string = None
        if not closed:
            return stop
        self.in_string = False
        self.tokens += 1
        if self.depth <= 1:
            quoted = b"null" if self.string is None else b'"' + self.string + b'"'
            self._keep(quoted, 0, len(quoted))
        return end + 1

    def _keep(self, data: bytes, start: int, end: int) -> None:
        room = self.MAX_TEXT - len(self.kept)
        if room > 0:
            self.kept += data[start:min(end, start + room)]
