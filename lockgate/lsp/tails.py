"""The word, identifier or member chain that ends at the cursor, found by scanning backwards.

Completion looks at the text before the cursor for what is being typed. A regular expression
anchored only at the end (``...$``) and run with ``search`` is retried from every start, each
try running on to the end: quadratic in a long run of letters or digits (a pasted 20,000-letter
token took seconds). These scans start at the end and stop where the answer cannot extend, so
their work is bounded by the length of the answer (plus one character) and by that of the
trailing run of characters a chain can hold.

Answers are those of the end-anchored expressions with ``\\Z``: text ending in a newline (a
block scalar's cursor line being empty) ends no word, unlike ``$``, which matches before it.
"""

from __future__ import annotations

import re
import string

_WORD_CHARS = string.ascii_letters + string.digits + "_-"
_IDENT_START = frozenset(string.ascii_letters + "_")
_WORD_RUN = re.compile(r"\w*")
_FIRST_IDENT_START = re.compile(r"[A-Za-z_]")

#: a member chain before the cursor, ``result.items[0].na``: the chain and the partial name
#: typed after its last dot. Matched only at the start :func:`chain_start` finds.
CHAIN = re.compile(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_][\w-]*|\[\d+\])*)\s*\.\s*([A-Za-z_]\w*)?\Z")


def word_tail(text: str) -> str:
    """The trailing run of ``[A-Za-z0-9_-]`` characters of ``text``."""
    return text[len(text.rstrip(_WORD_CHARS)):]


def ident_tail(text: str) -> str:
    """The longest suffix of ``text`` that is an identifier (``[A-Za-z_]\\w*``), or ""."""
    run = _word_run(text)
    first = _FIRST_IDENT_START.search(run)
    return run[first.start():] if first is not None else ""


def _word_run(text: str) -> str:
    """The trailing run of ``\\w`` characters (matched forwards on the reversed text: linear)."""
    return _WORD_RUN.match(text[::-1]).group(0)[::-1]  # type: ignore[union-attr]


def chain(text: str) -> re.Match[str] | None:
    """What ``CHAIN.search(text)`` answers (the leftmost match), in linear time."""
    start = chain_start(text)
    return CHAIN.match(text, start) if start is not None else None


# The states of a nondeterministic automaton reading the text backwards from its end (see
# chain_start): what may come next, to the left.
_PARTIAL = "partial"  # the partial name after the last dot, or more of it
_BEFORE_PARTIAL = "before_partial"  # spaces, then the last dot
_AFTER_DOT = "after_dot"  # spaces, then the end of an element
_ELEMENT_END = "element_end"  # the end of an element, right here
_FIRST = "first"  # more of the chain's first name (\w)
_SEGMENT = "segment"  # more of a dotted segment's name ([\w-])
_BEFORE_SEGMENT = "before_segment"  # spaces, then the dot before a segment's name
_INDEX_OPEN = "index_open"  # the digits of an index ``[0]``, its ``]`` just read
_INDEX = "index"  # more digits, or the index's ``[``


def chain_start(text: str) -> int | None:
    """The leftmost column where ``CHAIN`` matches the rest of ``text``, or None.

    The text is read backwards once, following every way the characters read so far can end a
    chain; the scan stops when none is left, so it reads no further than the trailing run of
    characters a chain is made of."""
    states = {_PARTIAL, _BEFORE_PARTIAL}
    found = None
    i = len(text)
    while states and i > 0:
        i -= 1
        states, accepted = _step(states, text[i])
        if accepted:
            found = i
    return found


def _step(states: set[str], ch: str) -> tuple[set[str], bool]:
    """The states after reading ``ch`` (leftwards), and whether a chain's first name can start
    at ``ch``."""
    word = ch.isalnum() or ch == "_"  # what \w matches in a str pattern
    starts = ch in _IDENT_START
    out: set[str] = set()
    accepted = False
    for state in states:
        if state == _AFTER_DOT and ch.isspace():
            out.add(_AFTER_DOT)
            continue
        if state in (_AFTER_DOT, _ELEMENT_END):
            if word:  # the last character of the chain's first name or of a segment's
                out.update((_FIRST, _SEGMENT))
                if starts:
                    out.add(_BEFORE_SEGMENT)
                    accepted = True
            elif ch == "-":
                out.add(_SEGMENT)
            elif ch == "]":
                out.add(_INDEX_OPEN)
            continue
        if state == _PARTIAL and word:
            out.add(_PARTIAL)
            if starts:
                out.add(_BEFORE_PARTIAL)
        elif state == _FIRST and word:
            out.add(_FIRST)
            accepted = accepted or starts
        elif state == _SEGMENT and (word or ch == "-"):
            out.add(_SEGMENT)
            if starts:
                out.add(_BEFORE_SEGMENT)
        elif state in (_BEFORE_PARTIAL, _BEFORE_SEGMENT) and ch.isspace():
            out.add(state)
        elif state in (_BEFORE_PARTIAL, _BEFORE_SEGMENT) and ch == ".":
            out.add(_AFTER_DOT)
        elif state in (_INDEX_OPEN, _INDEX) and ch.isdecimal():
            out.add(_INDEX)
        elif state == _INDEX and ch == "[":
            out.add(_ELEMENT_END)
    return out, accepted
