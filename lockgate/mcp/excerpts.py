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
from collections.abc import Iterator, Mapping
from typing import Any

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
    cuts = [cut for value in longest for cut in _cuts(value)]
    try:
        return _cut(message, cuts), _cut_all(data, cuts)
    except RecursionError:  # data nested deeper than the walk goes: the text at least is cut
        return _cut(message, cuts), data


def excerpt(value: str) -> str:
    """``value``'s start and its length."""
    return f"{value[:EXCERPT_CHARS]}… ({len(value)} characters)"


def _cuts(value: str) -> list[tuple[str, str]]:
    """(as written, cut) pairs for ``value``: its quoted forms (``repr``, then JSON with non-ASCII
    kept and escaped), the quotes kept round the excerpt and the length after them, then the
    bare text."""
    head, length = value[:EXCERPT_CHARS], f" ({len(value)} characters)"
    pairs: dict[str, str] = {}
    for quote in (repr, _json, json.dumps):
        quoted = quote(head)
        pairs.setdefault(quote(value), f"{quoted[:-1]}…{quoted[-1]}{length}")
    return [*pairs.items(), (value, excerpt(value))]


def _json(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _cut(text: str, cuts: list[tuple[str, str]]) -> str:
    if len(text) <= LONG_CHARS:  # too short to hold a long value
        return text
    for written, cut in cuts:
        if written in text:
            text = text.replace(written, cut)
    if len(text) > LONG_RUN:
        text = _LONG_RUN.sub(lambda run: excerpt(run.group()), text)
    return text


def _cut_all(value: Any, cuts: list[tuple[str, str]]) -> Any:
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
