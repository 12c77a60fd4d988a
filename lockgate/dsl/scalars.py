"""Where each character of a decoded YAML scalar came from in the document.

libyaml gives a scalar's decoded value and the marks around its source text, but not the
correspondence between the two: quotes, escapes, line folding and block indentation all move
characters. :func:`char_sources` replays libyaml's scanning rules over the source text for one
scalar (plain, single- or double-quoted, literal ``|`` or folded ``>``) and returns, for every
decoded character, the half-open source interval it came from. The replay is checked against the
decoded value; when it disagrees (an input the replay does not model), a greedy subsequence match
is used instead, so callers always get a monotonic, in-bounds mapping.

All offsets are indices into the parsed text (code points), as libyaml's marks are.
"""

from __future__ import annotations

from dataclasses import dataclass

_BREAKS = "\r\n\x85\u2028\u2029"
_BLANKS = " \t"

_SIMPLE_ESCAPES = {
    "0": "\0", "a": "\x07", "b": "\x08", "t": "\t", "\t": "\t", "n": "\n", "v": "\x0b",
    "f": "\x0c", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "'": "'", "\\": "\\",
    "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True, slots=True)
class CharSources:
    """``starts[i]``/``ends[i]``: the source interval of decoded character ``i``.

    ``exact`` is False when the replay failed and the mapping is a best-effort approximation.
    ``content_start``/``content_end`` bound the source of the value (inside quotes, after a block
    header), used for empty values and for offsets past the last character.
    """

    starts: tuple[int, ...]
    ends: tuple[int, ...]
    content_start: int
    content_end: int
    exact: bool


class _Out:
    """Accumulates decoded characters and their source intervals."""

    __slots__ = ("chars", "starts", "ends")

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def emit(self, ch: str, start: int, end: int) -> None:
        self.chars.append(ch)
        self.starts.append(start)
        self.ends.append(end)

    def text(self) -> str:
        return "".join(self.chars)


def _break_at(text: str, i: int, end: int) -> tuple[str, int]:
    """The normalised line break at ``i`` and its source length (libyaml's READ_LINE)."""
    c = text[i]
    if c == "\r":
        return "\n", 2 if i + 1 < end and text[i + 1] == "\n" else 1
    if c in "\n\x85":
        return "\n", 1
    return c, 1  # LS and PS are kept as they are


def char_sources(text: str, start: int, end: int, style: str | None, value: str) -> CharSources:
    """Map each character of ``value`` (the scalar decoded by libyaml) to its source interval.

    ``start``/``end`` are the scalar's marks: the first source character (opening quote, block
    indicator) and the index just past its source.
    """
    style = style or ""
    end = min(end, len(text))
    try:
        if style == "":
            result = _flow(text, start, end, ""), start, end
        elif style in "'\"":
            result = _flow(text, start + 1, max(start + 1, end - 1), style), start + 1, end - 1
        else:
            result = _block(text, start, end, style, value)
    except IndexError:
        result = None, start, end
    out, c_start, c_end = result
    if out is not None and out.text() == value:
        return CharSources(tuple(out.starts), tuple(out.ends), c_start, max(c_start, c_end), True)
    return _approximate(text, c_start, max(c_start, c_end), value)


# -- flow scalars (plain and quoted) ------------------------------------------------------------


class _Folder:
    """Line folding shared by plain and quoted scalars: whitespace and breaks between content."""

    __slots__ = ("out", "spaces", "leading", "trailing")

    def __init__(self, out: _Out) -> None:
        self.out = out
        self.spaces: list[int] = []  # indices of blanks on the current line, not yet emitted
        self.leading: tuple[str, int, int] | None = None  # first break: (char, start, end)
        self.trailing: list[tuple[str, int, int]] = []  # breaks of following empty lines

    def blank(self, text: str, i: int) -> None:
        if self.leading is None:
            self.spaces.append(i)

    def line_break(self, brk: tuple[str, int, int]) -> None:
        if self.leading is None:
            self.spaces.clear()
            self.leading = brk
        else:
            self.trailing.append(brk)

    def escaped_break(self) -> None:
        """A backslash-newline: the break folds to nothing, later empty lines still count."""
        self.leading = ("", 0, 0)

    def flush(self, text: str) -> None:
        """Emit the pending fold (or same-line blanks) before the next content character."""
        out = self.out
        if self.leading is not None:
            ch, s, e = self.leading
            if ch == "\n":
                if not self.trailing:
                    out.emit(" ", s, e)
            elif ch:
                out.emit(ch, s, e)
            for tch, ts, te in self.trailing:
                out.emit(tch, ts, te)
            self.leading = None
            self.trailing = []
        else:
            for i in self.spaces:
                out.emit(text[i], i, i + 1)
        self.spaces.clear()


def _flow(text: str, start: int, end: int, quote: str) -> _Out:
    """A plain (``quote == ""``), single- or double-quoted scalar's content ``[start, end)``:
    lines fold alike; only quoted scalars have escapes and keep blanks before the closing quote."""
    out = _Out()
    fold = _Folder(out)
    i = start
    while i < end:
        c = text[i]
        if c in _BLANKS:
            fold.blank(text, i)
            i += 1
        elif c in _BREAKS:
            ch, n = _break_at(text, i, end)
            fold.line_break((ch, i, i + n))
            i += n
        elif quote == "'" and c == "'":
            fold.flush(text)
            out.emit("'", i, i + 2)
            i += 2
        elif quote == '"' and c == "\\":
            fold.flush(text)
            i = _escape(text, i, end, out, fold)
        else:
            fold.flush(text)
            out.emit(c, i, i + 1)
            i += 1
    if quote:
        fold.flush(text)
    return out


def _escape(text: str, i: int, end: int, out: _Out, fold: _Folder) -> int:
    """Decode the escape sequence at ``i`` (a backslash); return the index after it."""
    code = text[i + 1]
    if code in _BREAKS:
        _, n = _break_at(text, i + 1, end)
        fold.escaped_break()
        return i + 1 + n
    if code in _SIMPLE_ESCAPES:
        out.emit(_SIMPLE_ESCAPES[code], i, i + 2)
        return i + 2
    width = _HEX_ESCAPES[code]  # KeyError is impossible: libyaml rejected unknown escapes
    digits = text[i + 2 : i + 2 + width]
    out.emit(chr(int(digits, 16)), i, i + 2 + width)
    return i + 2 + width


# -- block scalars ------------------------------------------------------------------------------


def _block(text: str, start: int, end: int, style: str, value: str) -> tuple[_Out | None, int, int]:
    """Replay a ``|``/``>`` scalar; the indentation is found by trying the plausible values."""
    i = start + 1
    chomp, explicit = 0, 0
    while i < end and (text[i] in "+-" or text[i].isdigit()):
        if text[i] == "+":
            chomp = 1
        elif text[i] == "-":
            chomp = -1
        else:
            explicit = int(text[i])
        i += 1
    while i < end and text[i] not in _BREAKS:  # blanks and a comment up to the line end
        i += 1
    if i < end:
        i += _break_at(text, i, end)[1]
    body = i
    auto = _auto_indent(text, body, end)
    candidates = [auto] if not explicit else []
    candidates += [n for n in range(max(auto, explicit) + 2, 0, -1) if n not in candidates]
    for indent in candidates:
        out = _replay_block(text, body, end, style == "|", indent, chomp)
        if out is not None and out.text() == value:
            return out, body, _trim_end(text, body, end)
    return None, body, _trim_end(text, body, end)


def _auto_indent(text: str, i: int, end: int) -> int:
    """libyaml's auto-detected indentation: the widest leading space run up to the first
    non-empty line (never less than 1)."""
    widest = 0
    while i < end:
        col = 0
        while i < end and text[i] == " ":
            i += 1
            col += 1
        widest = max(widest, col)
        if i < end and text[i] in _BREAKS:
            i += _break_at(text, i, end)[1]
            continue
        break
    return max(widest, 1)


def _replay_block(text: str, i: int, end: int, literal: bool, indent: int, chomp: int) -> _Out | None:
    out = _Out()
    leading: tuple[str, int, int] | None = None
    trailing: list[tuple[str, int, int]] = []
    leading_blank = False
    i, col = _block_breaks(text, i, end, indent, trailing)
    while col == indent and i < end:
        trailing_blank = text[i] in _BLANKS
        if not literal and leading is not None and leading[0] == "\n" and not leading_blank and not trailing_blank:
            if not trailing:
                out.emit(" ", leading[1], leading[2])
        elif leading is not None:
            out.emit(*leading)
        leading = None
        for brk in trailing:
            out.emit(*brk)
        trailing = []
        leading_blank = text[i] in _BLANKS
        while i < end and text[i] not in _BREAKS:
            out.emit(text[i], i, i + 1)
            i += 1
        if i < end:
            ch, n = _break_at(text, i, end)
            leading = (ch, i, i + n)
            i += n
        i, col = _block_breaks(text, i, end, indent, trailing)
    if chomp != -1 and leading is not None:
        out.emit(*leading)
    if chomp == 1:
        for brk in trailing:
            out.emit(*brk)
    return out


def _block_breaks(text: str, i: int, end: int, indent: int, trailing: list) -> tuple[int, int]:
    """Eat indentation and empty lines; return the index and column of the next content."""
    while True:
        col = 0
        while col < indent and i < end and text[i] == " ":
            i += 1
            col += 1
        if i < end and text[i] in _BREAKS:
            ch, n = _break_at(text, i, end)
            trailing.append((ch, i, i + n))
            i += n
            continue
        return i, col


def _trim_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in _BLANKS + _BREAKS:
        end -= 1
    return end


# -- fallback -----------------------------------------------------------------------------------


def _approximate(text: str, start: int, end: int, value: str) -> CharSources:
    """Greedy subsequence match of ``value`` in the source: exact for most characters, and
    monotonic and in bounds for the rest."""
    starts: list[int] = []
    ends: list[int] = []
    pos = start
    for ch in value:
        found = text.find(ch, pos, end) if ch not in "\n " else -1
        if found < 0:
            found = min(pos, max(start, end - 1))
        else:
            pos = found + 1
        starts.append(found)
        ends.append(min(found + 1, max(end, found + 1)))
    return CharSources(tuple(starts), tuple(ends), start, end, False)
