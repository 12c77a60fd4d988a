"""What is at the cursor: the YAML path, key or value, the text before the cursor inside the
string, and whether the cursor is inside a ``${`` reference or an expression.

Completion runs on half-typed text, which often is not valid YAML, so the YAML path is found
from the *indentation outline* of the current text rather than from the parser: each line's
indent, list dash and ``key:``, with block-scalar bodies recognised and skipped. This is the
block-style YAML people write specs in; flow collections (``- {id: a, do: x}``,
``gate: {on_approve: |}``, ``after: [a, |]``) are followed from their opening bracket, which
for a collection spread over several lines is found on an earlier line (looking back a bounded
number of lines: see :func:`_open_collection`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from lockgate.dsl.diagnostics import Position, YamlPath

from .tails import word_tail

_LINE = re.compile(
    r"""(?P<indent>[ ]*)(?P<dash>-(?:[ ]+|$))?
        (?:(?P<key>"[^"]*"|'[^']*'|[^\s#'"\[\]{},:\-](?:[^#:]*[^#:\ ])?|-[^\s#:](?:[^#:]*[^#:\ ])?)[ ]*:(?=[ ]|$)
           (?P<gap>[ ]*)(?P<value>.*))?""",
    re.VERBOSE,
)
_BLOCK_HEADER = re.compile(r"[|>][0-9+-]*[ ]*(#.*)?$")
_EXPR_FIELDS = frozenset({"when", "until", "expr"})
_MARK = re.compile(r"""['"#\[\]{},:]""")
#: the rest of a quoted scalar, its closing quote included (an escape or a doubled quote is text)
_CLOSING = {'"': re.compile(r'(?:[^"\\]|\\.)*+"', re.DOTALL), "'": re.compile(r"(?:[^']|'')*+'")}
#: How far the opening of a flow collection spread over several lines is looked for, back from
#: the cursor line: lines, and characters of those lines (the scans are linear in them). A
#: collection opened further back is not followed: its lines are read as block style, as before.
FLOW_LINES = 100
FLOW_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class Line:
    """The structure of one outline line (a line that is neither blank, a comment nor the body
    of a block scalar). Depends only on the line's text, so equal lines share one object."""

    first: int  # column of the first non-space character
    dash: int | None  # column of a leading list dash
    key: str | None
    key_col: int
    colon: int | None  # column of the ':' after the key
    value_col: int | None  # column where the value text starts
    block: bool  # the value is a block scalar header (| or >)


class Outline:
    """Indentation structure of a whole text, computed once per document version.

    Building one is a pass over the lines with each line's shape looked up by its text (an
    edit changes a few lines, so a new version re-parses only those); the per-line paths and
    subtree ends (for symbols, folding and code actions) are computed on first use.
    """

    def __init__(self, text: str, raw: list[str] | None = None) -> None:
        self.raw = raw if raw is not None else re.split(r"\r\n|\r|\n", text)
        self.lines: list[Line | None] = []
        self.block_owner: dict[int, int] = {}
        owner: Line | None = None
        owner_number = -1
        for number, raw_line in enumerate(self.raw):
            stripped = raw_line.strip()
            if owner is not None and (not stripped or _indent(raw_line) > owner.key_col):
                self.block_owner[number] = owner_number
                self.lines.append(None)
                continue
            owner = None
            line = _parse_line(raw_line) if stripped and not stripped.startswith("#") else None
            self.lines.append(line)
            if line is not None and line.block:
                owner, owner_number = line, number
        self._structure: tuple[list[YamlPath | None], list[int], dict[YamlPath, int], dict[YamlPath, int]] | None = None

    def _built(self) -> tuple[list[YamlPath | None], list[int], dict[YamlPath, int], dict[YamlPath, int]]:
        if self._structure is None:
            paths, ends, items = _index(self)
            line_of: dict[YamlPath, int] = {}
            for number, path in enumerate(paths):
                if path is not None:
                    line_of.setdefault(path, number)
            self._structure = paths, ends, items, line_of
        return self._structure

    @property
    def paths(self) -> list[YamlPath | None]:
        """The YAML path of every key line (None for other lines)."""
        return self._built()[0]

    @property
    def ends(self) -> list[int]:
        """The last line of every line's subtree."""
        return self._built()[1]

    @property
    def line_of(self) -> dict[YamlPath, int]:
        """The first line of every key path."""
        return self._built()[3]

    def key_path(self, number: int) -> YamlPath:
        """The path of the key on line ``number`` (found by walking up from it, so answering
        one cursor does not need the whole document's paths)."""
        line = self.lines[number]
        assert line is not None and line.key is not None
        return (*self.container_path(number, line.key_col, line.dash), _unquote(line.key))

    def item_line(self, path: YamlPath) -> int | None:
        """The line of the dash of the list item at ``path``."""
        return self._built()[2].get(path)

    def container_path(self, number: int, need: int, dash: int | None = None) -> YamlPath:
        """The path of the node holding content at column ``need`` of line ``number``;
        ``dash`` is the column of a list dash on that same line, if any."""
        path: list[str | int] = []
        counting, index = dash, 0
        for i in range(number - 1, -1, -1):
            line = self.lines[i]
            if line is None:
                continue
            if counting is not None:
                if line.dash == counting:
                    index += 1
                    continue
                if line.first > counting:
                    continue
                path.append(index)
                counting = None
                if line.key is None or line.key_col > need:
                    return tuple(reversed(path))
                path.append(_unquote(line.key))
                need = line.key_col
                counting, index = line.dash, 0
                continue
            if line.first >= need:
                continue
            if line.key is not None and line.key_col < need:
                path.append(_unquote(line.key))
                need = line.key_col
                counting, index = line.dash, 0
            elif line.dash is not None and line.dash < need:
                counting, index = line.dash, 0
        if counting is not None:
            path.append(index)
        return tuple(reversed(path))

    def sibling_keys(self, number: int, column: int) -> set[str]:
        """Keys already present in the mapping whose keys sit at ``column`` around line ``number``."""
        found: set[str] = set()
        for step in (-1, 1):
            i = number + step
            while 0 <= i < len(self.lines):
                line = self.lines[i]
                i += step
                if line is None or line.first > column:
                    continue
                if line.key is None or line.key_col != column:
                    break
                if line.dash is not None and step > 0:
                    break
                found.add(_unquote(line.key))
                if line.dash is not None:
                    break
        return found


def _index(outline: Outline) -> tuple[list[YamlPath | None], list[int], dict[YamlPath, int]]:
    """One pass over the outline: the YAML path of every key line and the last line of every
    line's subtree (for symbol ranges and folding)."""
    paths: list[YamlPath | None] = [None] * len(outline.lines)
    items: dict[YamlPath, int] = {}
    ends = list(range(len(outline.lines)))
    stack: list[list] = []  # [column, part, line number, is_item]
    open_lines: list[tuple[int, int, bool]] = []  # (line number, column, is an empty-valued key)
    last = -1
    for number, line in enumerate(outline.lines):
        if line is None:
            if number in outline.block_owner and outline.raw[number].strip():
                last = number
            continue
        while open_lines and _closes(open_lines[-1], line):
            ends[open_lines.pop()[0]] = last
        open_lines.append((number, line.first, line.key is not None and not outline.raw[number][line.colon + 1 :].strip()))  # type: ignore[operator]
        last = number
        if line.dash is not None:
            index = 0
            while stack and (stack[-1][0] > line.dash or (stack[-1][0] == line.dash and stack[-1][3])):
                popped = stack.pop()
                if popped[3] and popped[0] == line.dash:
                    index = popped[1] + 1
            stack.append([line.dash, index, number, True])
            items.setdefault(tuple(entry[1] for entry in stack), number)
        else:
            while stack and stack[-1][0] >= line.first:
                stack.pop()
        if line.key is not None:
            stack.append([line.key_col, _unquote(line.key), number, False])
            paths[number] = tuple(entry[1] for entry in stack)
    for number, _, _ in open_lines:
        ends[number] = last
    return paths, ends, items


def _closes(entry: tuple[int, int, bool], line: Line) -> bool:
    _, column, container = entry
    if line.first > column:
        return False
    # an indentless sequence ("steps:" then "- id:" at the same column) stays inside its key
    return not (line.first == column and container and line.dash is not None)


@lru_cache(maxsize=16384)
def _parse_line(raw: str) -> Line | None:
    match = _LINE.match(raw)
    if match is None:  # pragma: no cover - the pattern matches every string
        return None
    first = len(match["indent"])
    dash = first if match["dash"] else None
    key = match["key"]
    if key is None:
        key_col = first + len(match["dash"] or "")
        return Line(first, dash, None, key_col, None, None, False)
    key_col = match.start("key")
    value = match["value"] or ""
    return Line(
        first,
        dash,
        key.rstrip(),
        key_col,
        match.start("gap") - 1,
        match.start("value"),
        bool(_BLOCK_HEADER.match(value)),
    )


def _indent(raw: str) -> int:
    return len(raw) - len(raw.lstrip(" "))


def _unquote(key: str) -> str:
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
        return key[1:-1]
    return key


Where = Literal["key", "value", "item", "other"]


@dataclass(frozen=True, slots=True)
class CursorContext:
    """Everything completion and hover need to know about the cursor position.

    ``path``: for ``key`` the mapping the key belongs to; for ``value`` the value's own path;
    for ``item`` a new list item (``- |``), the item's path; ``other`` is where nothing is
    completed (a comment, a collection used as a key, text after a flow collection).
    ``before`` is the string value's text before the cursor (decoded for plain and quoted
    scalars, block indentation removed).
    ``word_start`` is the column where the word under completion starts on the cursor line.
    ``ref`` is the text after an unclosed ``${`` before the cursor, or None. ``after`` is the
    rest of the cursor line in a value (what a completion may replace the end of the word in).
    ``item_index`` is the index of the entry at the cursor in a flow-style list (``[a, b|]``).
    ``inline``: a key of a flow-style mapping (``{id: a, |}``), to be inserted on the line.
    """

    position: Position
    path: YamlPath
    where: Where
    before: str = ""
    word_start: int = 0
    ref: str | None = None
    present_keys: frozenset[str] = frozenset()
    key_column: int = 0
    after: str = ""
    item_index: int | None = None
    inline: bool = False

    @property
    def prefix(self) -> str:
        return word_tail(self.before)

    @property
    def field(self) -> str | int | None:
        return self.path[-1] if self.path else None

    @property
    def in_expression(self) -> bool:
        """Whether the value at the cursor is an expression (when, until, ensure expr, set)."""
        return self.where == "value" and is_expression_path(self.path)

    @property
    def flow(self) -> str | None:
        return self.path[1] if len(self.path) > 1 and self.path[0] == "flows" else None

    @property
    def step_index(self) -> int | None:
        if len(self.path) > 3 and self.path[2] == "steps" and isinstance(self.path[3], int):
            return self.path[3]
        return None

    @property
    def stage_index(self) -> int | None:
        """The fanout stage index when the cursor is inside a fanout stage."""
        p = self.path
        if len(p) > 6 and p[4] == "fanout" and p[5] == "steps" and isinstance(p[6], int):
            return p[6]
        return None


def is_expression_path(path: YamlPath) -> bool:
    """Whether the string at ``path`` is an expression (not a template)."""
    if not path or path[0] != "flows":
        return False
    last = path[-1]
    if last in _EXPR_FIELDS:
        return last != "until" or (len(path) > 1 and path[-2] == "iterate")
    return len(path) > 2 and path[-2] == "set" and "steps" in path


def context_at(outline: Outline, pos: Position) -> CursorContext:
    """The cursor context at ``pos`` (code points) in the text ``outline`` was built from."""
    if not 0 <= pos.line < len(outline.raw):
        return CursorContext(pos, (), "key")
    raw = outline.raw[pos.line]
    col = min(pos.character, len(raw))
    if pos.line in outline.block_owner:
        return _in_block(outline, pos, col)
    opened = _open_collection(outline, pos.line, min(_indent(raw), col))
    if opened is not None:
        return _in_open_collection(outline, pos, col, *opened)
    line = outline.lines[pos.line]
    head = raw[:col]
    comment = _comment_start(raw, line)
    if comment is not None and col > comment:
        return CursorContext(pos, outline.container_path(pos.line, _indent(raw)), "other")
    if line is None or not head.strip():
        path = outline.container_path(pos.line, col)
        return CursorContext(
            pos, path, "key", word_start=col,
            present_keys=frozenset(outline.sibling_keys(pos.line, col)), key_column=col,
        )
    if line.key is None or col <= line.key_col:
        return _partial_key(outline, line, pos, raw, col)
    if line.colon is not None and col <= line.colon:
        container = outline.container_path(pos.line, line.key_col, line.dash)
        return CursorContext(
            pos, container, "key", raw[line.key_col:col], line.key_col,
            present_keys=frozenset(outline.sibling_keys(pos.line, line.key_col)),
            key_column=line.key_col,
        )
    return _in_value(outline, line, pos, raw, col)


def _partial_key(outline: Outline, line: Line, pos: Position, raw: str, col: int) -> CursorContext:
    start = line.key_col
    if line.dash is not None and col > start and raw[start:start + 1] in ("{", "["):
        return _in_flow(pos, raw, col, outline.container_path(pos.line, start, line.dash), start)
    if line.dash is not None and col >= start:
        path = outline.container_path(pos.line, start, line.dash)
        return CursorContext(pos, path, "item", raw[start:col], start, key_column=start, after=raw[col:])
    path = outline.container_path(pos.line, line.first)
    return CursorContext(
        pos, path, "key", raw[line.first:col], line.first,
        present_keys=frozenset(outline.sibling_keys(pos.line, line.first)),
        key_column=line.first,
    )


def _in_value(outline: Outline, line: Line, pos: Position, raw: str, col: int) -> CursorContext:
    path = outline.key_path(pos.line)
    start = line.value_col if line.value_col is not None else col
    if col > start and raw[start:start + 1] in ("{", "["):
        return _in_flow(pos, raw, col, path, start)
    before = _decode_prefix(raw[start:col])
    return CursorContext(
        pos, path, "value", before, col - len(word_tail(raw[:col])),
        _open_ref(before), key_column=line.key_col, after=raw[col:],
    )


@dataclass(slots=True)
class _Frame:
    """One open flow collection while scanning a line: where its current entry starts, and
    for a mapping the entry's key once its ``:`` is seen (with every key before it); for a
    sequence the entry's index."""

    mapping: bool
    start: int
    key: str | None = None
    value: int | None = None
    index: int = 0
    keys: list[str | None] = field(default_factory=list)


def _scan_flow(raw: str, start: int, end: int, frames: list[_Frame]) -> int | None:
    """Follow the flow collections of ``raw[start:end]`` on ``frames``: the collections open
    at ``start``, or none when ``start`` is the outermost one's bracket. Where the outermost
    one closes (its bracket's column) when that is before ``end``, else None. Comments are
    skipped (``raw`` may hold several lines)."""
    outermost = max(len(frames), 1)
    for i in _unquoted(raw, start, end, flow=True, comments=[]):
        ch = raw[i]
        if ch in "{[":
            frames.append(_Frame(ch == "{", i + 1))
            continue
        top = frames[-1]
        if ch in "}]":
            frames.pop()
            if len(frames) < outermost:
                return i
        elif ch == ",":
            top.keys.append(top.key)
            top.start, top.key, top.value, top.index = i + 1, None, None, top.index + 1
        elif ch == ":" and top.mapping and top.key is None and raw[i + 1:i + 2] in ("", " ", "\t", "\n", ",", "}", "]"):
            top.key, top.value = _unquote(raw[top.start:i].strip()), i + 1
    return None


def _in_flow(pos: Position, raw: str, col: int, base: YamlPath, opening: int,
             line_start: int = 0, line_end: int | None = None) -> CursorContext:
    """The cursor inside a flow collection opened at column ``opening`` whose own path is
    ``base`` (a flow-style list item ``- {id: a, |}`` or a value ``gate: {on_approve: |}``):
    a key of the innermost mapping (with the keys already in it), an entry's value at its
    path, or an entry of a sequence (the sequence's path and ``item_index``).

    ``raw`` is the cursor line, or for a collection spread over several lines those lines
    joined (comments blanked out) from the opening one on, the cursor line from ``line_start``
    to ``line_end`` in it: ``col`` and ``opening`` are offsets in ``raw``, the answer's
    columns are on the cursor line."""
    line_end = len(raw) if line_end is None else line_end
    frames: list[_Frame] = []
    if _scan_flow(raw, opening, col, frames) is not None:  # the cursor is after the collection
        return CursorContext(pos, base, "other")
    path: list[str | int] = list(base)
    for frame in frames[:-1]:
        part = frame.key if frame.mapping else frame.index
        if part is None:  # a collection as a key
            return CursorContext(pos, base, "other")
        path.append(part)
    top = frames[-1]
    value_start = top.value if top.mapping else top.start
    entry = raw[max(top.start, line_start):col]  # what of the entry is on the cursor line
    entry_column = col - line_start - len(entry.lstrip())
    if value_start is None:
        return CursorContext(
            pos, tuple(path), "key", entry.lstrip(), entry_column, key_column=entry_column, after=raw[col:line_end],
            present_keys=frozenset(k for k in (*top.keys, *_later_keys(raw, col)) if k), inline=True,
        )
    if top.key is not None:  # an entry of a mapping (a sequence's entries have no key)
        path.append(top.key)
    before = _decode_prefix(raw[value_start:col].lstrip())
    return CursorContext(
        pos, tuple(path), "value", before,
        col - line_start - len(word_tail(raw[line_start:col])), _open_ref(before), key_column=entry_column,
        after=raw[col:line_end], item_index=None if top.mapping else top.index,
    )


def _later_keys(raw: str, col: int) -> list[str | None]:
    """The keys of the entries after the one at ``col`` in the flow mapping it is in. The entry
    at the cursor is what follows it on its line; when nothing does, one that starts on a
    later line is an entry after it."""
    mapping = _Frame(True, col)
    _scan_flow(raw, col, len(raw), [mapping])
    entries = [*mapping.keys, mapping.key]
    end = raw.find("\n", col)
    return entries if end >= 0 and not raw[col:end].strip() else entries[1:]


# -- flow collections spread over several lines ---------------------------------------------------


def _open_collection(outline: Outline, number: int, indent: int) -> tuple[int, int] | None:
    """Where the flow collection that holds the start of line ``number`` was opened (its line
    and its bracket's column), or None when that line starts in block style.

    The lines from the nearest one above that must be block style (:func:`_block_above`) are
    followed down: each collection opened on one of them is scanned until it closes, or until
    a line not indented past its opening line's margin, which it does not hold (YAML's rule:
    a collection left unclosed mid-edit does not take in the block lines below it). ``indent``
    is the cursor line's indentation, held to the same rule."""
    top = _block_above(outline, number) if indent > 0 else None
    if top is None:
        return None
    openers = [(i, s) for i in range(top, number) if (s := _flow_start(outline, i)) is not None]
    if not openers:
        return None
    first = openers[0][0]
    lines = outline.raw[first:number]
    starts = [0]
    for row in lines:
        starts.append(starts[-1] + len(row) + 1)
    text = "\n".join(lines)
    resume = first
    for i, start in openers:
        if i < resume:  # inside a collection opened above
            continue
        margin = _flow_margin(outline, i)
        stop = next((j for j in range(i + 1, number) if _left(outline, j, margin)), number)
        closed = _scan_flow(text, starts[i - first] + start, starts[stop - first] - 1, [])
        if closed is not None:
            resume = first + bisect_right(starts, closed)
        elif stop < number or indent <= margin:
            resume = stop
        else:
            return i, start
    return None


def _block_above(outline: Outline, number: int) -> int | None:
    """The nearest line above ``number`` that starts in block style: a list item's dash, a line
    at the left margin, a block scalar (none can be inside a flow collection), or the first
    line. None when there is none within ``FLOW_LINES`` lines and ``FLOW_CHARS`` characters."""
    chars = 0
    for i in range(number - 1, max(number - 1 - FLOW_LINES, -1), -1):
        if i in outline.block_owner:
            return i + 1
        chars += len(outline.raw[i]) + 1
        if chars > FLOW_CHARS:
            return None
        line = outline.lines[i]
        if line is not None and (line.dash is not None or line.first == 0 or line.block):
            return i
    return 0 if number <= FLOW_LINES else None


def _flow_start(outline: Outline, number: int) -> int | None:
    """The column of the bracket of a flow collection starting line ``number``'s value or list
    item (or the line itself), when there is one."""
    line = outline.lines[number]
    if line is None:
        return None
    start = line.value_col if line.key is not None else line.key_col
    return start if start is not None and outline.raw[number][start:start + 1] in ("{", "[") else None


def _flow_margin(outline: Outline, number: int) -> int:
    """The column the later lines of a collection opened on line ``number`` are indented past:
    its key's, else its list dash's or its own."""
    line = outline.lines[number]
    assert line is not None
    return line.key_col if line.key is not None else line.first


def _left(outline: Outline, number: int, margin: int) -> bool:
    """Whether line ``number`` is outside a collection whose lines are indented past ``margin``
    (blank and comment lines are not)."""
    line = outline.lines[number]
    return line is not None and line.first <= margin


def _in_open_collection(outline: Outline, pos: Position, col: int, number: int, start: int) -> CursorContext:
    """The cursor on a later line of the flow collection opened at column ``start`` of line
    ``number``: its lines joined, from the opening one to a few after the cursor line (for
    the keys written after the cursor), are read as one line is."""
    line = outline.lines[number]
    assert line is not None
    if line.key is not None:
        base = outline.key_path(number)
    else:
        base = outline.container_path(number, start, line.dash)
    last = _collection_end(outline, pos.line, _flow_margin(outline, number))
    text = "\n".join(outline.raw[number:last + 1])
    line_start = sum(len(row) + 1 for row in outline.raw[number:pos.line])
    cursor = line_start + col
    comments = _comments(text, start) if "#" in text else []
    if any(c < cursor and text.find("\n", c, cursor) < 0 for c in comments):  # the cursor is in a comment
        return CursorContext(pos, base, "other")
    return _in_flow(pos, _blanked(text, comments), cursor, base, start, line_start, line_start + len(outline.raw[pos.line]))


def _collection_end(outline: Outline, number: int, margin: int) -> int:
    """The last line after ``number`` that a collection whose lines are indented past
    ``margin`` may go on to, within the look-back's budget (for the keys after the cursor)."""
    chars = 0
    end = min(len(outline.lines), number + 1 + FLOW_LINES)
    for i in range(number + 1, end):
        chars += len(outline.raw[i]) + 1
        if chars > FLOW_CHARS or i in outline.block_owner or _left(outline, i, margin):
            return i - 1
    return end - 1


def _comments(text: str, start: int) -> list[int]:
    """Where the comments of the flow collection text from ``start`` on start."""
    found: list[int] = []
    for _ in _unquoted(text, start, len(text), flow=True, comments=found):
        pass  # the scan records the comments it skips
    return found


def _blanked(text: str, comments: list[int]) -> str:
    """``text`` with the comments starting at ``comments`` replaced by spaces, to their line's end."""
    pieces, done = [], 0
    for start in comments:
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        pieces += [text[done:start], " " * (end - start)]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _unquoted(raw: str, start: int, end: int, flow: bool = False, comments: list[int] | None = None) -> Iterator[int]:
    """The columns of the marks (``[]{},:#`` and quotes) of ``raw[start:end]`` outside quoted
    scalars. A quote opens one only where a scalar starts: at ``start``, and in a flow
    collection (``flow``) after ``[``, ``{``, ``,`` or ``:`` and any spaces (``it's`` in a
    plain scalar is not a quote). With ``comments``, comments are skipped to the end of their
    line and where each starts is added to it. The text between marks is passed over by
    regular expressions, not character by character."""
    opens, i = True, start
    while (mark := _MARK.search(raw, i, end)) is not None:
        j = mark.start()
        opens = opens and not raw[i:j].strip(" \t\n")  # only spaces since a scalar could start
        ch = raw[j]
        if ch in "'\"" and opens:
            closing = _CLOSING[ch].match(raw, j + 1, end)
            # a quote doubled across ``end`` is text: the scalar goes on past it
            if closing is None or (ch == "'" and closing.end() == end and raw[end:end + 1] == "'"):
                return
            i, opens = closing.end(), False
        elif comments is not None and _starts_comment(raw, j, start):
            comments.append(j)
            i = raw.find("\n", j, end)  # on to the line break, ``opens`` as it was
            if i < 0:
                return
        else:
            yield j
            i, opens = j + 1, flow and ch in "[{,:"


def _starts_comment(raw: str, i: int, start: int) -> bool:
    """Whether the ``#`` (outside quotes) at ``i`` starts a comment: at ``start`` or after a space."""
    return raw[i] == "#" and (i == start or raw[i - 1] in " \t\n")


def _comment_start(raw: str, line: Line | None) -> int | None:
    """The column of the ``#`` that starts a comment on an outline line (or a comment line)."""
    stripped = raw.lstrip(" ")
    if stripped.startswith("#"):
        return len(raw) - len(stripped)
    if line is None or line.value_col is None:
        return None
    start = line.value_col
    for i in _unquoted(raw, start, len(raw), flow=raw[start:start + 1] in ("[", "{")):
        if _starts_comment(raw, i, start):
            return i
    return None


def _in_block(outline: Outline, pos: Position, col: int) -> CursorContext:
    owner_number = outline.block_owner[pos.line]
    owner = outline.lines[owner_number]
    assert owner is not None
    body = [outline.raw[n] for n in range(owner_number + 1, pos.line + 1)]
    indents = [_indent(b) for b in body if b.strip()]
    strip = min(indents) if indents else col
    lines = [b[strip:] for b in body[:-1]] + [outline.raw[pos.line][strip:col]]
    before = "\n".join(lines)
    raw = outline.raw[pos.line]
    return CursorContext(
        pos, outline.key_path(owner_number), "value", before,
        col - len(word_tail(raw[:col])), _open_ref(before), key_column=owner.key_col,
        after=raw[col:],
    )


def _decode_prefix(text: str) -> str:
    """The decoded scalar text of a value prefix as typed (plain, single or double quoted)."""
    if text.startswith("'"):
        return text[1:].replace("''", "'")
    if text.startswith('"'):
        return re.sub(r"\\(.)", r"\1", text[1:])
    return text


def _open_ref(before: str) -> str | None:
    """The text after the last ``${`` before the cursor when that reference is still open."""
    start = before.rfind("${")
    if start < 0 or "}" in before[start:]:
        return None
    return before[start + 2 :]
