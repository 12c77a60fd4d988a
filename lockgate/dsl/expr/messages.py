"""Friendly parse errors: Lark's "unexpected token" turned into what the author most likely meant.

Each rule recognises one common slip (``=`` for ``==``, ``and`` for ``&&``, a method call, a
``${...}`` template inside an expression, ...) and says what to write instead, with the span of
the offending characters; an operator slip also carries the operator to write as the error's
``replacement``, for a quick fix. Anything unrecognised falls back to "unexpected X; expected Y".
"""

from __future__ import annotations

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ...errors import ExprError

Span = tuple[int, int]

_OPERATORS = {"OR": "||", "AND": "&&", "EQ": "==", "NE": "!=", "LE": "<=", "GE": ">=", "LT": "<",
              "GT": ">", "IN": "in", "PLUS": "+", "MINUS": "-", "STAR": "*", "SLASH": "/", "BANG": "!"}
_DISPLAY = {**_OPERATORS, "DOT": "'.'", "LSQB": "'['", "RSQB": "']'", "LPAR": "'('", "RPAR": "')'",
            "COMMA": "','", "_COMMA": "','", "NAME": "a name", "NUMBER": "a number",
            "STRING": "a string", "TRUE": "true", "FALSE": "false", "NULL": "null", "$END": "the end"}
_VALUES = {"NAME", "NUMBER", "STRING", "TRUE", "FALSE", "NULL", "RPAR", "RSQB"}
_WORD_OPERATORS = {"and": "&&", "or": "||", "not": "!", "is": "=="}
_CHARACTER_HINTS = {
    "%": "there is no '%' operator; the arithmetic operators are + - * /",
    "?": "there is no conditional operator 'a ? b : c'; combine booleans with && and || instead",
    ":": "':' has no meaning in an expression (there are no ternaries or object literals)",
    "&": "use '&&' for logical and",
    "|": "use '||' for logical or",
    "{": "there are no object literals in expressions",
    "}": "unexpected '}' (there are no object literals in expressions)",
    ";": "an expression is a single expression; ';' is not allowed",
    "^": "there is no '^' operator",
}
_ESCAPES = set("\"'\\/bfnrt")


def explain(source: str, exc: UnexpectedInput, seen: list[Token], open_brackets: list[Token]) -> ExprError:
    """The ``parse`` ExprError for a Lark error at ``exc``; ``seen`` ends with the last tokens read."""
    if isinstance(exc, UnexpectedCharacters):
        return _bad_character(source, exc.pos_in_stream)
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        before = [t for t in seen if t is not token]
        return _bad_token(source, token, before, open_brackets, exc.expected)
    return ExprError("parse", str(exc).splitlines()[0], None)


def _bad_character(source: str, pos: int) -> ExprError:
    char = source[pos]
    if char == "=":
        return _bad_equals(source, pos)
    if char in "\"'":
        return _bad_string(source, pos)
    if char == "$" and source.startswith("${", pos):
        end = source.find("}", pos)
        span = (pos, end + 1 if end >= 0 else len(source))
        return ExprError("parse", "'${...}' references are for templates; expressions read values "
                         "directly, e.g. result.<step>.<field> or input.<field>", span)
    if char in _CHARACTER_HINTS:
        return ExprError("parse", _CHARACTER_HINTS[char], (pos, pos + 1))
    if char == "\\":
        return ExprError("parse", "a backslash is only allowed inside a string", (pos, pos + 1))
    return ExprError("parse", f"unexpected character {char!r}", (pos, pos + 1))


#: Runs of comparison characters that are not operators, and the operator their writer meant.
_EQUALS_SLIPS = {"=": "==", "===": "==", "!==": "!=", "=>": ">=", "=<": "<="}


def _bad_equals(source: str, pos: int) -> ExprError:
    """The error for an '=' that is not part of an operator: the whole run of comparison
    characters around it, and the operator to write instead when one is clearly meant."""
    start, end = pos, pos + 1
    while start > 0 and source[start - 1] in "=<>!":
        start -= 1
    while end < len(source) and source[end] in "=<>!":
        end += 1
    written = source[start:end]
    meant = _EQUALS_SLIPS.get(written)
    if meant is None:
        return ExprError("parse", f"'{written}' is not an operator (the comparisons are == != < <= > >=)",
                         (start, end))
    what = "compare with" if meant == "==" else "use"
    return ExprError("parse", f"'{written}' is not an operator; {what} '{meant}'", (start, end), replacement=meant)


def _bad_string(source: str, start: int) -> ExprError:
    """Why the string opened at ``start`` does not lex: a bad escape, a control char, no end."""
    quote, i, n = source[start], start + 1, len(source)
    while i < n:
        char = source[i]
        if char == "\\":
            escape = source[i + 1: i + 2]
            if escape == "u" and not _is_hex4(source[i + 2: i + 6]):
                return ExprError("parse", "'\\u' must be followed by exactly 4 hex digits", (i, min(i + 6, n)))
            if escape != "u" and escape not in _ESCAPES:
                shown = f"'\\{escape}'" if escape else "a backslash at the end"
                return ExprError("parse", f"invalid escape {shown} in a string; allowed: "
                                 "\\\" \\' \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", (i, min(i + 2, n)))
            i += 2
            continue
        if char < " ":
            return ExprError("parse", f"a raw control character (U+{ord(char):04X}) is not allowed in "
                             "a string; use an escape such as \\n", (i, i + 1))
        if char == quote:
            break
        i += 1
    return ExprError("parse", f"unterminated string: missing the closing {quote}", (start, n))


def _is_hex4(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)


def _bad_token(source: str, token: Token, before: list[Token], open_brackets: list[Token],
               expected: set[str]) -> ExprError:
    prev = before[-1] if before else None
    prev2 = before[-2] if len(before) > 1 else None
    if token.type == "DOT" and source[token.end_pos: token.end_pos + 1].isdigit() \
            and (prev is None or prev.type not in _VALUES):
        return ExprError("parse", "a number needs a digit before the point: write 0.5, not .5",
                         (token.start_pos, token.end_pos + 1))
    word = _word_operator(source, token, prev)
    if word is not None:
        return word
    for rule in _TOKEN_RULES:
        found = rule(token, prev, prev2, open_brackets)
        if found is not None:
            return _parse_error(*found)
    return ExprError("parse", f"unexpected {_show(token)}; expected {_expected(expected)}", _span(token))


def _parse_error(message: str, span: Span, replacement: str | None = None) -> ExprError:
    """A token rule's finding (its message, span and, for a slip, the text to write instead)."""
    return ExprError("parse", message, span, replacement=replacement)


def _span(token: Token) -> Span:
    return (token.start_pos, token.end_pos)


def _show(token: Token) -> str:
    if token.type == "$END":
        return "end of expression"
    return repr(clipped(str(token.value)))


def clipped(text: str, limit: int = 40) -> str:
    """``text`` as a message quotes it: whole, or its first characters and ``...`` when longer
    than ``limit`` (a name or a literal may be 100,000 characters long; the error's span shows
    all of it in the excerpt)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _expected(expected: set[str]) -> str:
    names = sorted({_DISPLAY.get(name, name) for name in expected})
    return ", ".join(names[:12]) if names else "nothing more"


def _word_operator(source: str, token: Token, prev: Token | None) -> ExprError | None:
    """A word written for an operator (``and``, ``or``, ``not``, ``is``, ``is not``), with the
    operator to write instead; ``not in`` has none (it is written ``!(a in b)``)."""
    for candidate in (token, prev):
        if candidate is None or candidate.type != "NAME" or candidate.value not in _WORD_OPERATORS:
            continue
        word, after = candidate.value, source[candidate.end_pos:]
        rest = after.lstrip()
        if word == "not" and _starts_word(rest, "in"):
            return ExprError("parse", "there is no 'not in' operator; write !(a in b)", _span(candidate))
        if word == "is" and _starts_word(rest, "not"):
            end = candidate.end_pos + len(after) - len(rest) + 3
            return _parse_error("use '!=' instead of 'is not'", (candidate.start_pos, end), "!=")
        good = _WORD_OPERATORS[word]
        return _parse_error(f"use '{good}' instead of '{word}'", _span(candidate), good)
    return None


def _starts_word(text: str, word: str) -> bool:
    """Whether ``text`` starts with the whole word ``word`` (``in``, not ``in_stock``)."""
    following = text[len(word):len(word) + 1]
    return text.startswith(word) and not (following.isalnum() or following == "_")


def _method_call(token, prev, prev2, brackets):
    if token.type == "LPAR" and prev is not None and prev.type == "NAME" and prev2 is not None \
            and prev2.type == "DOT":
        message = (f"methods cannot be called ('.{clipped(prev.value)}(...)'); only builtins can be called "
                   "on a bare name, e.g. len(x)")
        return message, (prev2.start_pos, token.end_pos)
    return None


def _bad_index(token, prev, prev2, brackets):
    if prev is None or prev.type != "LSQB" or token.type == "NUMBER":
        return None
    extra = " (read object members with .name)" if token.type == "STRING" else ""
    return (f"an index must be a non-negative integer literal such as [0]{extra}", _span(token))


def _member_in(token, prev, prev2, brackets):
    if token.type in ("IN", "NUMBER") and prev is not None and prev.type == "DOT":
        if token.type == "IN":
            return "'in' is an operator and cannot be used as a member name", _span(token)
        return "a member name must be a name; for an array element write [0]", _span(token)
    return None


def _leading_zero(token, prev, prev2, brackets):
    if token.type == "NUMBER" and prev is not None and prev.type == "NUMBER" \
            and prev.value == "0" and prev.end_pos == token.start_pos:
        return "numbers cannot have leading zeros", (prev.start_pos, token.end_pos)
    return None


def _bad_decimal(token, prev, prev2, brackets):
    if prev is not None and prev.type == "DOT" and prev2 is not None and prev2.type == "NUMBER" \
            and prev2.end_pos == prev.start_pos and token.type != "NAME":
        return "a number cannot end with '.': write 5 or 5.0", (prev2.start_pos, prev.end_pos)
    return None


def _unbalanced(token, prev, prev2, brackets):
    if token.type in ("RPAR", "RSQB") and not brackets:
        char = ")" if token.type == "RPAR" else "]"
        return f"'{char}' has no matching opening bracket", _span(token)
    if token.type == "$END" and brackets and (prev is None or prev.type not in _OPERATORS):
        opened = brackets[-1]
        closer = ")" if opened.type == "LPAR" else "]"
        return f"'{opened.value}' is never closed: add '{closer}'", _span(opened)
    return None


def _trailing_operator(token, prev, prev2, brackets):
    if token.type == "$END" and prev is not None and (prev.type in _OPERATORS or prev.type == "DOT"):
        return f"the expression ends after '{prev.value}': an operand is missing", _span(prev)
    if token.type == "$END" and prev is not None and prev.type in ("LSQB", "LPAR"):
        return f"the expression ends after '{prev.value}'", _span(prev)
    return None


def _missing_operand(token, prev, prev2, brackets):
    if token.type in _OPERATORS and token.type not in ("BANG", "MINUS") and \
            (prev is None or prev.type in _OPERATORS or prev.type in ("LPAR", "LSQB")):
        return f"'{token.value}' needs a value on its left", _span(token)
    return None


def _array_literal(token, prev, prev2, brackets):
    if token.type == "LSQB" and (prev is None or prev.type not in _VALUES):
        return "there are no array literals in expressions; '[n]' only indexes an array", _span(token)
    return None


def _missing_operator(token, prev, prev2, brackets):
    if token.type in _VALUES - {"RPAR", "RSQB"} and prev is not None and prev.type in _VALUES:
        return (f"missing operator between {_show(prev)} and {_show(token)}",
                (prev.start_pos, token.end_pos))
    return None


_TOKEN_RULES = (_method_call, _bad_index, _member_in, _leading_zero,
                _bad_decimal, _unbalanced, _trailing_operator, _missing_operand, _array_literal,
                _missing_operator)
