"""``matches``: the regex safety filter (reference §5.6) and JS ``u``-mode -> Python translation.

The filter is deliberately paranoid, exactly as the reference describes: no backreferences, no
``(?``, no literal ``{``, at most 32 quantifiers, no quantified group holding a quantifier or an
alternation, no two adjacent quantified atoms (groups are transparent), balanced brackets.

Patterns that pass are translated to Python ``re`` syntax with JavaScript's meaning: ASCII
``\\d \\w \\b``, JavaScript's ``\\s``, ``.`` stopping at every line terminator, ``$`` only at the
very end, ``\\u{...}`` code points, ``[]`` and ``[^]``. What Python cannot express
(``\\p{...}``, ``\\S`` inside a class) is rejected as an invalid regex rather than approximated.
When the ``regex`` package is installed, searches also run under a time limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...errors import ExprError
from .limits import MAX_QUANTIFIERS

try:  # optional: a search timeout as a second line of defence against polynomial backtracking
    import regex as _regex_module
except ImportError:  # pragma: no cover - depends on the environment
    _regex_module = None

SEARCH_TIMEOUT_SECONDS = 1.0
UNSAFE = "regex contains a potentially unsafe construct"
_JS_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"
_DOT = f"[^{_LINE_TERMINATORS}]"
_QUANTIFIER = re.compile(r"\{(\d+)(,(\d*))?\}")
_SYNTAX = set("^$\\.*+?()[]{}|/")
_CLASS_SPECIAL = set("\\]^-[&~|")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}


class UnsafePattern(Exception):
    """Internal: the filter's verdict, turned into a ``validation`` ExprError by the caller."""


@dataclass(slots=True)
class _Group:
    before: bool  # was the atom just before the group quantified (groups are transparent)
    quantified_inside: bool = False
    alternation: bool = False


def check_safety(pattern: str) -> int:
    """Raise ``ExprError('validation', ...)`` if the filter rejects ``pattern``; otherwise return
    the number of unbounded quantifiers (``* + {m,}``), which decides how the search is run."""
    return _scanned(pattern).unbounded


def _scanned(pattern: str) -> _Scanner:
    scanner = _Scanner(pattern)
    try:
        scanner.scan()
    except UnsafePattern as exc:
        raise ExprError("validation", f"{UNSAFE} ({exc})") from None
    return scanner


class _Scanner:
    """One left-to-right pass over the pattern, tracking what the filter needs."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.groups: list[_Group] = []
        self.quantifiers = 0
        self.unbounded = 0
        self.last_quantified = False  # the most recent atom (groups transparent) was quantified
        self.before_atom = False  # last_quantified as it was before the pending atom
        self.pending: _Group | None | bool = False  # False: nothing to repeat; None: plain atom
        self.top_alternation = False  # a '|' outside every group

    def scan(self) -> None:
        p = self.p
        while self.i < len(p):
            char = p[self.i]
            if char == "\\":
                self._escape()
            elif char == "[":
                self._class()
            elif char == "(":
                self._open()
            elif char == ")":
                self._close()
            elif char == "|":
                self._alternation()
            elif char in "*+?" or (char == "{" and self._brace_is_quantifier()):
                self._quantifier()
            elif char == "{":
                raise UnsafePattern(f"literal '{{' at {self.i}; escape it as \\{{")
            elif char in "^$":
                self.pending = False
                self.i += 1
            else:
                self._atom(1)
        if self.groups:
            raise UnsafePattern("unbalanced parentheses")

    def _atom(self, width: int) -> None:
        self.before_atom = self.last_quantified
        self.last_quantified = False
        self.pending = None
        self.i += width

    def _escape(self) -> None:
        p, i = self.p, self.i
        nxt = p[i + 1: i + 2]
        if nxt and nxt in "123456789":
            raise UnsafePattern(f"backreference \\{nxt}")
        if nxt in ("b", "B"):
            self.pending = False
            self.i += 2
            return
        width = 2
        if nxt in ("u", "p", "P") and p[i + 2: i + 3] == "{":
            end = p.find("}", i + 3)
            width = (end - i + 1) if end >= 0 else len(p) - i
        self._atom(width)

    def _class(self) -> None:
        p, j = self.p, self.i + 1
        if p[j: j + 1] == "^":
            j += 1
        while j < len(p) and p[j] != "]":
            j += 2 if p[j] == "\\" else 1
        if j >= len(p):
            raise UnsafePattern("unterminated character class")
        self._atom(j + 1 - self.i)

    def _open(self) -> None:
        if self.p[self.i + 1: self.i + 2] == "?":
            raise UnsafePattern("'(?' groups (lookarounds, named or non-capturing groups)")
        self.groups.append(_Group(before=self.last_quantified))
        self.pending = False
        self.i += 1

    def _close(self) -> None:
        if not self.groups:
            raise UnsafePattern("unbalanced parentheses")
        group = self.groups.pop()
        if self.groups:
            self.groups[-1].alternation |= group.alternation
            self.groups[-1].quantified_inside |= group.quantified_inside
        self.pending = group
        self.before_atom = group.before
        self.i += 1

    def _alternation(self) -> None:
        if self.groups:
            self.groups[-1].alternation = True
        else:
            self.top_alternation = True
        self.last_quantified = False
        self.pending = False
        self.i += 1

    def _brace_is_quantifier(self) -> bool:
        return _QUANTIFIER.match(self.p, self.i) is not None

    def _quantifier(self) -> None:
        if self.pending is False:
            raise UnsafePattern(f"a quantifier with nothing to repeat at {self.i}")
        self.quantifiers += 1
        if self.quantifiers > MAX_QUANTIFIERS:
            raise UnsafePattern(f"more than {MAX_QUANTIFIERS} quantifiers")
        if isinstance(self.pending, _Group) and (self.pending.quantified_inside or self.pending.alternation):
            raise UnsafePattern("a quantified group containing a quantifier or an alternation")
        if self.before_atom:
            raise UnsafePattern("two adjacent quantified atoms")
        if self.groups:
            self.groups[-1].quantified_inside = True
        match = _QUANTIFIER.match(self.p, self.i) if self.p[self.i] == "{" else None
        self.unbounded += self.p[self.i] in "*+" or bool(match and match[2] == ",")
        self.i = match.end() if match else self.i + 1
        if self.p[self.i: self.i + 1] == "?":
            self.i += 1  # lazy modifier
        self.last_quantified = True
        self.pending = False


class InvalidPattern(Exception):
    """Internal: the pattern is not a valid JavaScript ``u``-mode regex (or not translatable)."""


def translate(pattern: str) -> str:
    """The Python ``re`` pattern meaning what ``pattern`` means as a JS ``u``-flag regex."""
    return _Translator(pattern).run()


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.out: list[str] = []

    def run(self) -> str:
        p, out = self.p, self.out
        while self.i < len(p):
            char = p[self.i]
            if char == "\\":
                out.append(self._escape(in_class=False)[0])
            elif char == "[":
                out.append(self._class())
            elif char == ".":
                out.append(_DOT)
                self.i += 1
            elif char == "$":
                out.append("\\Z")
                self.i += 1
            elif char == "{" and (quantifier := _QUANTIFIER.match(p, self.i)) is not None:
                out.append(quantifier.group())  # {m}, {m,} and {m,n} read the same in Python
                self.i = quantifier.end()
            elif char in "]{}":
                raise InvalidPattern(f"lone '{char}' (escape it)")
            else:
                out.append(char)
                self.i += 1
        return "".join(out)

    def _escape(self, in_class: bool) -> tuple[str, bool]:
        """(Python text, is_single_character) for the escape at ``self.i``."""
        p, i = self.p, self.i
        if i + 1 >= len(p):
            raise InvalidPattern("a backslash at the end of the pattern")
        char = p[i + 1]
        self.i += 2
        if char in "dDwW":
            return "\\" + char, False
        if char == "s":
            return (_JS_SPACE if in_class else f"[{_JS_SPACE}]"), False
        if char == "S":
            if in_class:
                raise InvalidPattern("\\S inside a character class is not supported")
            return f"[^{_JS_SPACE}]", False
        if char == "b":
            return (_code_point(8), True) if in_class else ("\\b", False)
        if char == "B" and not in_class:
            return "\\B", False
        if char in _CONTROL_ESCAPES:
            return _code_point(_CONTROL_ESCAPES[char]), True
        if char == "0" and not p[i + 2: i + 3].isdigit():
            return _code_point(0), True
        if char == "c" and p[i + 2: i + 3].isascii() and p[i + 2: i + 3].isalpha():
            self.i += 1
            return _code_point(ord(p[i + 2]) % 32), True
        if char == "x" and _is_hex(p[i + 2: i + 4], 2):
            self.i += 2
            return _code_point(int(p[i + 2: i + 4], 16)), True
        if char == "u":
            return _code_point(self._unicode_escape()), True
        if char in "pP":
            raise InvalidPattern("Unicode property escapes (\\p{...}) are not supported")
        if char in _SYNTAX or (in_class and char == "-"):
            return _code_point(ord(char)), True
        raise InvalidPattern(f"invalid escape \\{char}")

    def _unicode_escape(self) -> int:
        p, i = self.p, self.i
        if p[i: i + 1] == "{":
            end = p.find("}", i)
            digits = p[i + 1: end] if end > 0 else ""
            if not _is_hex(digits, len(digits)) or not digits or int(digits, 16) > 0x10FFFF:
                raise InvalidPattern("invalid \\u{...} escape")
            self.i = end + 1
            return int(digits, 16)
        if not _is_hex(p[i: i + 4], 4):
            raise InvalidPattern("\\u must be followed by 4 hex digits or {...}")
        unit = int(p[i: i + 4], 16)
        self.i = i + 4
        marker, low_hex = p[i + 4: i + 6], p[i + 6: i + 10]
        if 0xD800 <= unit <= 0xDBFF and marker == "\\u" and _is_hex(low_hex, 4) \
                and 0xDC00 <= int(low_hex, 16) <= 0xDFFF:
            self.i = i + 10
            return 0x10000 + ((unit - 0xD800) << 10) + (int(low_hex, 16) - 0xDC00)
        return unit

    def _class(self) -> str:
        p = self.p
        self.i += 1
        negated = p[self.i: self.i + 1] == "^"
        self.i += negated
        members: list[str] = []
        while p[self.i] != "]":  # the filter has already rejected unterminated classes
            low, single = self._class_atom()
            if p[self.i: self.i + 1] == "-" and p[self.i + 1: self.i + 2] not in ("]", ""):
                self.i += 1
                high, high_single = self._class_atom()
                if not (single and high_single):
                    raise InvalidPattern("a class escape cannot be a range endpoint")
                if _decode(low) > _decode(high):
                    raise InvalidPattern("a character class range is out of order")
                members.append(f"{low}-{high}")
            else:
                members.append(low)
        self.i += 1
        if not members:
            return "[\\x00-\\U0010ffff]" if negated else "(?!)"
        return "[" + ("^" if negated else "") + "".join(members) + "]"

    def _class_atom(self) -> tuple[str, bool]:
        char = self.p[self.i]
        if char == "\\":
            return self._escape(in_class=True)
        self.i += 1
        return (_code_point(ord(char)) if char in _CLASS_SPECIAL else char), True


def _code_point(value: int) -> str:
    return f"\\U{value:08x}"


def _decode(text: str) -> int:
    """The code point of a single-character class member as the translator emits it."""
    if text.startswith("\\U"):
        return int(text.removeprefix("\\U"), 16)
    return ord(text)


def _is_hex(text: str, width: int) -> bool:
    return len(text) == width and all(c in "0123456789abcdefABCDEF" for c in text)


# A leading atom (any character, a class escape, a class or a plain character) and its quantifier.
_LEADING = re.compile(r"(\.|\\[dDwWsS]|\[\^?(?:\\.|[^\]\\])*\]|[^\\^$.*+?()\[\]{}|])"
                      r"(?:[*+?]|\{(\d+)(,\d*)?\})\??")


def search_form(pattern: str, scanner: _Scanner) -> tuple[str, int] | None:
    """A pattern that a search finds exactly where ``pattern`` is found, with fewer unbounded
    quantifiers, and how many it keeps; None when there is none.

    Without a top-level alternation, a leading ``X{m,n}`` (``*`` ``+`` ``?`` alike) can be cut
    to ``X{m}``: wherever ``X{m,n}R`` matches, ``X{m}R`` matches too, later by the extra
    repetitions, and conversely. ``.*x.*y`` becomes ``x.*y``; the search then no longer retries
    ``.*`` from every start position (cubic backtracking on ``xxx...``, beyond the time limit
    on 4096 characters, becomes quadratic: about 20 ms).
    """
    leading = _LEADING.match(pattern)
    if leading is None or scanner.top_alternation:
        return None
    atom, quantifier = leading[1], pattern[leading.end(1)]
    least = int(leading[2]) if quantifier == "{" else int(quantifier == "+")
    kept = atom * least if least <= 1 else f"{atom}{{{least}}}"
    unbounded = scanner.unbounded - (quantifier in "*+" or leading[3] == ",")
    reduced = kept + pattern[leading.end():]
    return None if reduced == pattern else (reduced, unbounded)


# A literal run of a chain: plain characters other than line terminators, or escaped syntax.
_CHAIN_LITERAL = re.compile(r"(?:[^\\^$.*+?()\[\]{}|\n\r\u2028\u2029]|\\[\\^$.*+?()\[\]{}|/])+")
_CHAIN_GAP = re.compile(r"\.\*\??")


def chain_form(pattern: str) -> str | None:
    """For ``[^][.*]L1.*L2 ... .*Ln[.*]`` with literal runs ``Lk``: a Python pattern that takes
    each ``.*Lk`` at its earliest ``Lk`` and never backtracks into it (an atomic group); None
    for any other pattern.

    That is exact for a search: ``.`` matches every character of a run (no line terminator),
    so ending ``Lk`` earlier leaves every later match reachable. The search is then at most
    quadratic, where ``.*x.*y.*z`` backtracks cubically (beyond the time limit on
    ``xyxy...``, 4096 characters).
    """
    anchored = pattern.startswith("^")
    at = int(anchored)
    gap = _CHAIN_GAP.match(pattern, at)
    leading_gap = gap is not None
    at = gap.end() if gap else at
    segments: list[str] = []
    while at < len(pattern):
        literal = _CHAIN_LITERAL.match(pattern, at)
        if literal is None:
            return None
        segments.append(literal.group())
        gap = _CHAIN_GAP.match(pattern, literal.end())
        at = gap.end() if gap else literal.end()
        if gap is None and at < len(pattern):
            return None
    if not segments:
        return None
    first = _earliest(segments[0]) if anchored and leading_gap else translate(segments[0])
    return ("^" if anchored else "") + first + "".join(_earliest(s) for s in segments[1:])


def _earliest(literal: str) -> str:
    """``.*literal`` committed to the first ``literal`` it can reach (a single character by a
    negated class, which the engines scan fastest)."""
    if len(literal) == 1:
        char = _code_point(ord(literal))
        return f"(?>[^{char}{_LINE_TERMINATORS}]*{char})"
    return f"(?>{_DOT}*?{translate(literal)})"


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> Any:
    """Filter, translate and compile ``pattern``; raises ``ExprError('validation', ...)``.

    A pattern with one unbounded quantifier at most backtracks polynomially in degree 2 at worst
    over a 4096-character input, so it runs on ``re``; several unbounded quantifiers (``.*a.*b``)
    can be slow enough to matter, so they run on ``regex`` with a timeout when it is installed.
    The pattern compiled for the search is its :func:`search_form` when it has one, or its
    :func:`chain_form` when that still leaves several unbounded quantifiers (the pattern itself
    is compiled first, so that its errors are reported as they are).
    """
    scanner = _scanned(pattern)
    compiled = _compile(pattern, scanner.unbounded)
    reduced = search_form(pattern, scanner)
    if (reduced[1] if reduced else scanner.unbounded) > 1 and (chain := chain_form(pattern)):
        return re.compile(chain, re.ASCII)  # greedy '.*' is faster while only one is left
    return compiled if reduced is None else _compile(*reduced)


def _compile(pattern: str, unbounded: int) -> Any:
    try:
        python_pattern = translate(pattern)
        engine = _regex_module if unbounded > 1 and _regex_module is not None else re
        return engine.compile(python_pattern, engine.ASCII)
    except InvalidPattern as exc:
        raise ExprError("validation", f"invalid regex /{pattern}/: {exc}") from None
    except (re.error, ValueError, OverflowError, RecursionError) as exc:
        raise ExprError("validation", f"invalid regex /{pattern}/: {exc}") from None
    except Exception as exc:  # the regex module's own error class
        if _regex_module is not None and isinstance(exc, _regex_module.error):
            raise ExprError("validation", f"invalid regex /{pattern}/: {exc}") from None
        raise


def search(compiled: Any, text: str) -> bool:
    """Unanchored search, bounded in time when the ``regex`` package is available."""
    if _regex_module is not None and not isinstance(compiled, re.Pattern):
        try:
            return compiled.search(text, timeout=SEARCH_TIMEOUT_SECONDS) is not None
        except TimeoutError:
            raise ExprError("resource_limit", "the regex search took too long") from None
    return compiled.search(text) is not None
