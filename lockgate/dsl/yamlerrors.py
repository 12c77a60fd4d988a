"""Syntax errors from libyaml, rephrased for the person editing the spec.

libyaml reports what its state machine expected ("did not find expected key", "mapping values
are not allowed in this context"); :func:`explain_syntax_error` turns the common cases into what
went wrong in the text (a tab used for indentation, an unquoted ``: `` inside a value, an
unclosed quote or bracket) and where to look, with a hint on how to fix it.
"""

from __future__ import annotations

import re

import yaml


def explain_syntax_error(exc: yaml.MarkedYAMLError, src: str) -> tuple[str, str | None, int, int, list[tuple[int, int, str]]]:
    """A message a person can act on, the hint, and the interval to point at."""
    problem = (exc.problem or "").strip()
    context = (exc.context or "").strip()
    pmark = exc.problem_mark
    cmark = exc.context_mark
    idx = min(pmark.index, len(src)) if pmark is not None else 0
    cidx = min(cmark.index, len(src)) if cmark is not None else None
    ch = src[idx] if idx < len(src) else ""
    start, end = idx, idx + (1 if ch and ch not in "\r\n" else 0)
    related: list[tuple[int, int, str]] = []
    hint = None

    def line_of(i: int) -> int:
        return src.count("\n", 0, i) + 1

    runaway = None if "quoted scalar" in context else _runaway_quote(src, idx)
    if runaway is not None:
        opening, closing = runaway
        quote = src[opening]
        kind = "double" if quote == '"' else "single"
        message = (f"this {kind}-quoted string is not closed on its line; it runs on to line "
                   f"{line_of(closing)}, where the next {quote} closes it")
        hint = f"add the closing {quote} at the end of line {line_of(opening)}"
        related.append((closing, closing + 1, "the string is closed only here"))
        start, end = opening, opening + 1
    elif "tab" in problem or (ch == "\t" and "cannot start any token" in problem):
        message = "a tab is used for indentation; YAML indents with spaces only"
        hint = "replace the tab with spaces"
    elif "cannot start any token" in problem:
        message = f"`{ch}` cannot start a plain value in YAML"
        hint = "quote the value"
    elif "mapping values are not allowed" in problem:
        message = "unexpected `:` — a plain value cannot contain `: ` (a colon followed by a space)"
        hint = "quote the whole value, e.g. \"a: b\""
    elif "block sequence entries are not allowed" in problem:
        message = "a list cannot start on the same line as its key"
        hint = "put `- item` on the next line, indented under the key"
    elif "quoted scalar" in context and ("end of stream" in problem or "document indicator" in problem):
        quote = src[cidx] if cidx is not None and cidx < len(src) else "'"
        kind = "double" if quote == '"' else "single"
        message = f"this {kind}-quoted string is never closed"
        hint = f"add the closing {quote}"
        if cidx is not None:
            related.append((idx, idx, "the document ends here without the closing quote"))
            start, end = cidx, cidx + 1
    elif "unknown escape" in problem:
        escaped = src[idx + 1 : idx + 2]
        message = f"`\\{escaped}` is not a valid escape in a double-quoted string"
        hint = "write `\\\\` for a backslash, or use single quotes"
        start, end = idx, idx + 2
    elif "did not find expected ',' or" in problem or "expected ',' or" in problem:
        closer = "]" if "sequence" in context else "}"
        opener = "[" if closer == "]" else "{"
        message = f"the `{opener}` opened on line {line_of(cidx or 0)} is not closed with `{closer}`"
        hint = f"add `{closer}`, or quote the value if `{opener}` is meant as text (e.g. a template)"
        if cidx is not None and idx >= len(src.rstrip()):
            related.append((idx, idx, "the document ends here"))
            start, end = cidx, cidx + 1
    elif "did not find expected key" in problem:
        if ch == "-":
            message = "a list item `-` where a key was expected; check the indentation"
        elif _after_closing_quote(src, idx):
            message = "unexpected text after a closing quote"
            hint = "quote the whole value, or double a quote inside a single-quoted string ('it''s')"
        else:
            message = (f"expected a key at the indentation of the mapping that starts on line "
                       f"{line_of(cidx or 0)}; check the indentation")
    elif "did not find expected '-' indicator" in problem:
        message = (f"expected a list item `- ` at the indentation of the list that starts on line "
                   f"{line_of(cidx or 0)}; check the indentation")
    elif "could not find expected ':'" in problem:
        message = "a key is missing its `:`, or a plain value runs onto the next line"
        if cidx is not None:
            start, end = cidx, cidx + max(1, len(src[cidx:].split("\n", 1)[0].rstrip()))
    elif "expected node content" in problem:
        message = "a value is expected here"
        hint = "write the value, or `null` for none"
    elif "document indicator" in problem:
        message = "a `---` or `...` line inside a value"
    else:
        message = f"{problem}{' (' + context + ')' if context else ''}" or "the YAML does not parse"
    return message, hint, start, end, related


def _runaway_quote(src: str, idx: int) -> tuple[int, int] | None:
    """(opening, closing) offsets of a quoted string that a missing closing quote made run on
    over lines: the error at ``idx`` follows, on its line, a quote that closes a string opened
    on an earlier line as a value (``do: "text`` ... ``key: "``). Each quote before ``idx`` on
    the line is tried as the closing one, in order."""
    line_start = src.rfind("\n", 0, idx) + 1
    before = src[line_start:idx]
    for at, quote in ((i, c) for i, c in enumerate(before) if c in "'\""):
        if before.count(quote) % 2 == 0:
            continue
        opening = _opening_quote(src, line_start + at, quote)
        if opening is not None and _opens_value(src, opening, line_start):
            return opening, line_start + at
    return None


#: The text before a quote that opens a value: a key and its colon, or a list item's dash.
_VALUE_HEAD = re.compile(r"\s*(?:-\s+)*(?:(?:[^\s#'\"][^#'\"]*?|'[^']*'|\"[^\"]*\"):\s+|-\s+)")
_BLOCK_HEADER = re.compile(r".*:\s+[|>][-+0-9]*\s*(?:#.*)?")


def _opens_value(src: str, opening: int, closing_line: int) -> bool:
    """Whether the quote at ``opening``, on a line before ``closing_line``, starts a value: the
    line before it is only a key or a dash, and that line is not inside a block scalar (whose
    text is not YAML) or a comment."""
    line_start = src.rfind("\n", 0, opening) + 1
    if line_start == closing_line or not _VALUE_HEAD.fullmatch(src[line_start:opening]):
        return False
    return not _in_block_scalar(src, line_start)


def _in_block_scalar(src: str, line_start: int) -> bool:
    """Whether the line at ``line_start`` is content of a ``|`` or ``>`` block scalar: the first
    line above it indented less is a block header."""
    line_end = src.find("\n", line_start)
    line = src[line_start:line_end if line_end >= 0 else len(src)]
    indent = len(line) - len(line.lstrip(" "))
    for above in reversed(src[:max(line_start - 1, 0)].split("\n")):
        stripped = above.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        if len(above) - len(stripped) < indent:
            return bool(_BLOCK_HEADER.fullmatch(above))
    return False


def _opening_quote(src: str, closing: int, quote: str) -> int | None:
    at = closing
    while True:
        at = src.rfind(quote, 0, at)
        if at < 0:
            return None
        if quote == '"' and at > 0 and src[at - 1] == "\\":
            continue
        if quote == "'" and at > 0 and src[at - 1] == "'":  # '' is an escaped quote
            at -= 1
            continue
        return at


def _after_closing_quote(src: str, idx: int) -> bool:
    line_start = src.rfind("\n", 0, idx) + 1
    before = src[line_start:idx].rstrip()
    return bool(before) and before[-1] in "'\"" and before.count(before[-1]) >= 2
