"""The server's standard input as pygls reads it: every message's header checked before pygls
sees it, so no header, however malformed, can crash the server or silence it.

pygls reads a header line by line, keeps the first ``Content-Length: N`` it finds, then reads
N bytes in one call, which allocates them up front. One frame announcing a huge length killed the
server with a MemoryError, and a header block without a usable Content-Length left the rest of
its frame glued to the next header line, where pygls never matched a header again: the server
answered nothing more and said nothing (review s13b F1, F3).

:class:`FramedInput` stands in for stdin. It reads a whole message itself and hands pygls the
header in the one form pygls reads (``Content-Length: N``, a blank line) and then the body. The
rules, per case:

* **Too large.** A Content-Length over :data:`MAX_MESSAGE_BYTES` is refused as soon as its line
  is read, and the body is not read. Nothing tells where the next message starts short of
  reading (or waiting for) that many bytes, so the server logs the error to the client, stops
  reading and exits with status 1 and one line on stderr: the editor sees it end and can restart
  it. (The limit leaves room for the largest spec, 10 MB, in JSON escapes.)
* **No usable Content-Length.** A header block that ends (blank line) with no Content-Length, a
  value that is not a decimal number, two of them, or a zero length, is skipped and logged (a
  Content-Length line after one whose value was no length starts a header of its own). The
  server keeps serving: what followed that header is read as junk up to the next line that
  ends with a Content-Length header, where reading starts again.
* **Junk before a header.** Bytes before ``Content-Length:`` on its line, and lines that are not
  headers at all, are dropped and logged with the next message: they are what is left of a
  message whose body was longer than its Content-Length said, or of a skipped one. No valid
  JSON body holds a line ending in ``Content-Length: N`` (JSON strings cannot hold a raw line
  break), so that line is always a real header.
* **Input ends inside a message.** Logged; the server ends as at any end of input.

A line is looked at from its end only, and only its last :data:`MAX_LINE_BYTES` bytes are kept,
so junk without line breaks is read in bounded memory too. Other headers (``Content-Type``) are
accepted and ignored, as pygls ignores them; header names are matched without regard to case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import BinaryIO

from lockgate.dsl.yamlevents import MAX_MESSAGE_BYTES  # the largest body read: one holding the largest spec
from lockgate.errors import LockgateError

#: How much of a line is kept while looking for the end of it: far more than any header needs.
MAX_LINE_BYTES = 4096

#: A header line: its name and its value (to strip), in time linear in the line's length.
_HEADER = re.compile(rb"([A-Za-z0-9_-]+)[ \t]*:(.*)\n", re.DOTALL)
#: A Content-Length header at the end of a line, after junk or not.
_CONTENT_LENGTH_AT_END = re.compile(rb"content-length[ \t]*:[ \t]*([0-9]+)[ \t]*\r?\n\Z", re.IGNORECASE)


class FramingError(LockgateError):
    """The language server's input cannot be read on: a message announced more than the
    server reads, and where the next one starts is unknown."""


class FramedInput:
    """A binary stream in place of stdin, handing pygls only well-framed messages.

    pygls calls :meth:`readline` until a blank line, then :meth:`read` for the body. ``report``
    gets one sentence for every problem; ``failure`` is set when the input cannot be read on
    (pygls then sees the input end).
    """

    def __init__(self, raw: BinaryIO, report: Callable[[str], None]) -> None:
        self._raw = raw
        self._report = report
        self._lines: list[bytes] = []
        self._body = b""
        self._dropped = 0  # bytes read and dropped since the last message handed on
        self._why = ""  # the first reason for dropping them
        self.failure: FramingError | None = None

    def readline(self) -> bytes:
        """The next line of the message header pygls is reading; b"" at the end of the input."""
        if not self._lines:
            if self.failure is not None:
                return b""
            body = self._next_body()
            if body is None:
                return b""
            self._body = body
            self._lines = [b"Content-Length: %d\r\n" % len(body), b"\r\n"]
        return self._lines.pop(0)

    def read(self, size: int = -1) -> bytes:
        """The body of the message whose header pygls just read."""
        body, self._body = self._body, b""
        return body

    def _next_body(self) -> bytes | None:
        """The body of the next well-framed message; None at the end of the input (or when
        the input cannot be read on: then ``failure`` says why)."""
        length = self._next_length()
        body = self._raw.read(length) if length is not None else b""
        self._flush_dropped()
        if length is None:
            return None
        if len(body) < length:
            self._report(f"the input ended {len(body):,} bytes into a message of {length:,} bytes")
            return None
        return body

    def _next_length(self) -> int | None:
        """Read up to the end of the next header block with a usable Content-Length and return
        that length, skipping (and reporting) every block without one."""
        block = _Block()
        while True:
            line = self._line()
            if not line:
                self._drop(block.size, "the input ended inside a message header")
                return None
            if not line.strip():
                if block.length is not None and not block.problem:
                    return block.length
                if block.size:
                    self._drop(block.size + len(line), block.problem or "its header has no Content-Length")
                    self._flush_dropped()
                block = _Block()
                continue
            junk = _junk_before_length(line)
            if junk:
                self._drop(block.size + junk, "junk before a Content-Length header (what is left of a message "
                           "longer than its Content-Length said, or of a skipped one)")
                block, line = _Block(), line[junk:]
            header = _HEADER.fullmatch(line)
            if header is None:
                self._drop(len(line), f"{_shown(line)} is not a message header")
                continue
            is_length = header[1].lower() == b"content-length"
            if is_length and block.problem and block.length is None:
                # after a Content-Length that was no length, a new one starts the next header
                self._drop(block.size, block.problem)
                block = _Block()
            block.size += len(line)
            if is_length:
                value = header[2].strip()
                if block.length is not None:
                    block.problem = block.problem or "its header has two Content-Length lines"
                block.length = self._length(value)
                if self.failure is not None:
                    return None
                if block.length is None:
                    block.problem = block.problem or f"its Content-Length {_shown(value)} is not a positive whole number"

    def _length(self, value: bytes) -> int | None:
        """A Content-Length value as a number of bytes; None when it is not one, or when it is
        over the limit (then ``failure`` is set and reported)."""
        if not value.isdigit() or not value.strip(b"0"):
            return None
        digits = value.lstrip(b"0")
        if len(digits) > len(str(MAX_MESSAGE_BYTES)) or int(digits) > MAX_MESSAGE_BYTES:
            shown = digits.decode() if len(digits) <= 30 else f"a number of {len(digits):,} digits"
            self.failure = FramingError(
                f"a message announced Content-Length {shown}, over the limit of {MAX_MESSAGE_BYTES:,} bytes "
                f"(64 MiB); where the next message starts is unknown, so the language server stops")
            self._report(str(self.failure))
            return None
        return int(digits)

    def _line(self) -> bytes:
        """The next input line, or the last :data:`MAX_LINE_BYTES` of it when it is longer (the
        rest is counted as dropped); b"" at the end of the input."""
        line = self._raw.readline(MAX_LINE_BYTES)
        while line and not line.endswith(b"\n"):
            more = self._raw.readline(MAX_LINE_BYTES)
            if not more:
                break
            line += more
            if len(line) > MAX_LINE_BYTES:
                self._drop(len(line) - MAX_LINE_BYTES, "a line too long to be a message header")
                line = line[-MAX_LINE_BYTES:]
        return line

    def _drop(self, size: int, why: str) -> None:
        """Count ``size`` bytes as dropped, for ``why`` if they are the first."""
        if size:
            self._dropped += size
            self._why = self._why or why

    def _flush_dropped(self) -> None:
        """Report the bytes dropped since the last message, if any."""
        if self._dropped:
            self._report(f"skipped {self._dropped:,} bytes of input that were not a well-formed message: {self._why}")
            self._dropped, self._why = 0, ""


class _Block:
    """A message header being read: its size so far, its length once read, what is wrong."""

    def __init__(self) -> None:
        self.size = 0
        self.length: int | None = None
        self.problem = ""


def _junk_before_length(line: bytes) -> int:
    """How many bytes come before a Content-Length header that ends ``line`` (0 when none do,
    or when the line does not end with one)."""
    found = _CONTENT_LENGTH_AT_END.search(line)
    return found.start() if found else 0


def _shown(value: bytes) -> str:
    """A few bytes of input as they can be shown in a log line."""
    text = value.rstrip(b"\r\n").decode("utf-8", "backslashreplace")
    return repr(text if len(text) <= 40 else text[:40] + "...")
