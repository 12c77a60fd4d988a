"""Caller values quoted in a tool error, cut to an excerpt.

A refusal names what it refuses (``no run with id '...'``, ``unknown field "..."``, a label
over its limit), and a tool error carries the message in its text and in its structured
content, some of them several times over: a 5 MiB argument made an answer of some 40 MiB that
took seconds to send, to tell the caller a value it already has. The messages come from many
places (the schema check, the engine, its stores, the spec loader), so rather than each cutting
its own quotes, :func:`cut_quotes` cuts them where the tool error is made: each long string of
the call (an argument's value or key, the tool's name) becomes its first :data:`EXCERPT_CHARS`
characters and its length, wherever the error writes it: as is, as Python's ``repr`` does or as
JSON does (an input path writes a key that needs quoting as ``input["..."]``, escapes and all).
A value written some other way still has its long runs of text: every run of more than
:data:`LONG_RUN` characters without a space left in the error is cut the same way.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

#: A string of the call longer than this is cut where an error quotes it.
LONG_CHARS = 120
#: How much of a cut string is kept.
EXCERPT_CHARS = 80
#: The longest strings of the call looked for (bounds the search in a call carrying many).
MAX_LOOKED_FOR = 64
#: A run of text without a space longer than this is cut wherever it came from (a value of the
#: call quoted in a form the cuts do not know); long enough for any path or identifier.
LONG_RUN = 1000
_LONG_RUN = re.compile(r"\S{%d,}" % (LONG_RUN + 1))


def cut_quotes(message: str, data: dict[str, Any], call: Any) -> tuple[str, dict[str, Any]]:
    """(``message``, ``data``) with every long string of ``call`` in them cut to an excerpt."""
    longest = heapq.nlargest(MAX_LOOKED_FOR, set(_long_strings(call)), key=len)
    if not longest:
        return message, data
    cuts = [(value, [_Quoted.of(value, quote) for quote in _QUOTES]) for value in longest]
    try:
        return _cut(message, cuts), _cut_all(data, cuts)
    except RecursionError:  # data nested deeper than the walk goes: the text at least is cut
        return _cut(message, cuts), data


def excerpt(value: str) -> str:
    """``value``'s start and its length."""
    return f"{value[:EXCERPT_CHARS]}… ({len(value)} characters)"


def _json(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


#: How an error may quote a value: Python's ``repr``, then JSON with non-ASCII kept and escaped.
_QUOTES: tuple[Callable[[str], str], ...] = (repr, _json, json.dumps)
#: How much of a value is quoted at a time to find where a text writes it whole. Quoting a
#: value whole made several copies of it (a 1 GiB argument ran the server out of memory,
#: review s13b F4); a piece at a time, the cost is this much, whatever the value's length.
_PIECE = 64 * 1024


class _Quoted(NamedTuple):
    """How ``quote`` writes ``value``: between two ``mark``s, starting with ``head``."""

    value: str
    quote: Callable[[str], str]
    mark: str
    head: str  #: the opening mark and the excerpt's characters as written

    @classmethod
    def of(cls, value: str, quote: Callable[[str], str]) -> _Quoted:
        # repr takes " for a string holding ' and no ", ' otherwise; JSON always "
        mark = '"' if quote is repr and "'" in value and '"' not in value else quote("")[0]
        return cls(value, quote, mark, mark + _body(value[:EXCERPT_CHARS], quote, mark))

    def cut(self, text: str) -> str:
        """``text`` with every place it writes the value so cut, found without writing it whole."""
        at = text.find(self.head)
        parts, done = [], 0
        while at >= 0:
            end = self._end(text, at)
            if end is None:
                at = text.find(self.head, at + 1)
                continue
            parts += [text[done:at], f"{self.head}…{self.mark} ({len(self.value)} characters)"]
            done, at = end, text.find(self.head, end)
        return "".join(parts) + text[done:] if parts else text

    def _end(self, text: str, at: int) -> int | None:
        """Where the value so written ends in ``text`` if it starts at ``at``, else None; compared a
        piece of the value at a time."""
        at += len(self.mark)
        for start in range(0, len(self.value), _PIECE):
            body = _body(self.value[start:start + _PIECE], self.quote, self.mark)
            if not text.startswith(body, at):
                return None
            at += len(body)
        return at + len(self.mark) if text.startswith(self.mark, at) else None


def _body(piece: str, quote: Callable[[str], str], mark: str) -> str:
    """``piece`` as ``quote`` writes it inside a value quoted with ``mark`` (every character is
    escaped on its own, so a value's body is the bodies of its pieces)."""
    written = quote(piece)
    body = written[1:-1]
    # repr quotes a piece holding ' and no " with ", where the whole value may take ' and escape it
    return body if written[0] == mark else body.replace(mark, "\\" + mark)


_Cuts = list[tuple[str, list[_Quoted]]]  # each long value, and how it may be quoted


def _cut(text: str, cuts: _Cuts) -> str:
    """``text`` with each value of ``cuts`` in it cut, in its quoted forms (the quotes kept round
    the excerpt, the length after them), then as bare text."""
    if len(text) <= LONG_CHARS:  # too short to hold a long value
        return text
    for value, quoted in cuts:
        for form in quoted:
            text = form.cut(text)
        if value in text:
            text = text.replace(value, excerpt(value))
    if len(text) > LONG_RUN:
        text = _LONG_RUN.sub(lambda run: excerpt(run.group()), text)
    return text


def _cut_all(value: Any, cuts: _Cuts) -> Any:
    """A copy of the structured ``value`` with its strings (keys too) cut."""
    if isinstance(value, str):
        return _cut(value, cuts)
    if isinstance(value, Mapping):
        return {_cut(k, cuts) if isinstance(k, str) else k: _cut_all(v, cuts) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut_all(item, cuts) for item in value]
    return value


def _long_strings(call: Any) -> Iterator[str]:
    """The strings (keys too) longer than :data:`LONG_CHARS` anywhere in ``call``; iterative,
    as arguments may nest deeper than Python's recursion goes."""
    stack = [call]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if len(value) > LONG_CHARS:
                yield value
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
