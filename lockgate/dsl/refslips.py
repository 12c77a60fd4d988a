"""Friendly explanations of reference mistakes: why a ``${...}`` is malformed, which common
slips a carry reference looks like (``${steps.x.output}``, ``${x.outputs}``, ``${input}``...),
and which literal text looks like a reference (``{{input.x}}``, ``$input.x``).

These are messages, not syntax: scanning asks for them only once a reference has failed to
parse (or, for look-alikes, once per scanned string), and a suggested fix is offered only when
it parses. Keeping them apart leaves the scanner short.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import RefError
from .refsyntax import _REF, Span, _inner, _parses, format_path

if TYPE_CHECKING:
    from .refscan import Ref


# -- syntax errors --------------------------------------------------------------------------------

_HOW = "write ${input.<field>}, ${<step>.output...}, ${<carry>}, ${item} or ${prev}"


def _syntax_error(inner: str, exc: UnexpectedInput, span: Span) -> RefError:
    """Explain why ``inner`` (the text between ``${`` and ``}``) is not a reference."""
    message, fixed = _diagnose(inner, _error_pos(inner, exc))
    replacement = "${" + fixed + "}" if fixed is not None and _parses(fixed) else None
    return RefError(message, span, replacement=replacement)


def _error_pos(inner: str, exc: UnexpectedInput) -> int:
    if isinstance(exc, UnexpectedCharacters):
        return exc.pos_in_stream
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        return exc.token.start_pos or 0
    return len(inner)


def _diagnose(inner: str, pos: int) -> tuple[str, str | None]:
    for rule in (_empty, _nested, _spaces, _mustache_inside, _input_without_path, _bad_name):
        found = rule(inner)
        if found is not None:
            return found
    return _bad_path(inner, pos)


def _empty(inner: str) -> tuple[str, str | None] | None:
    return (f"empty reference ${{}}; {_HOW}", None) if not inner else None


def _nested(inner: str) -> tuple[str, str | None] | None:
    if "${" in inner:
        return ("references do not nest: ${ inside ${...} (the first } closes the reference)", None)
    return None


def _spaces(inner: str) -> tuple[str, str | None] | None:
    if not re.search(r"\s", inner):
        return None
    stripped = inner.strip()
    if stripped and not re.search(r"\s", stripped):
        return (f"spaces are not allowed inside a reference; write ${{{stripped}}}", stripped)
    return ("spaces are not allowed inside a reference", None)


def _mustache_inside(inner: str) -> tuple[str, str | None] | None:
    if inner.startswith("{"):
        fixed = inner.lstrip("{")
        return (f"a reference is written ${{{fixed}}}, with single braces", fixed)
    return None


def _input_without_path(inner: str) -> tuple[str, str | None] | None:
    if inner.startswith("input.") and re.fullmatch(r"input\.*", inner):
        return ("an input reference needs a field after input., like ${input.topic}", None)
    return None


def _bad_name(inner: str) -> tuple[str, str | None] | None:
    head = re.match(r"[A-Za-z_][A-Za-z0-9_-]*", inner)
    if head is None:
        if inner[0].isdigit() or inner[0] in "-.[":
            return (f"a reference starts with a lowercase name; {_HOW}", None)
        return None
    name = head.group(0)
    if re.search(r"[A-Z]", name):
        lowered = name.lower()
        return (
            f"step ids and carry names are lowercase (a-z, 0-9, _ and -), so {name!r} cannot be one; "
            f"did you mean {lowered!r}?",
            lowered + inner[len(name):],
        )
    if name[0] == "_":
        return (f"step ids and carry names start with a lowercase letter, not {name[0]!r}", None)
    return None


def _bad_path(inner: str, pos: int) -> tuple[str, str | None]:
    rest = inner[pos:]
    index = re.match(r"\[\s*(-?\d+|['\"][^'\"]*['\"]|[^\]]*)\s*\]?", rest)
    if rest.startswith("[") and index:
        return _bad_index(inner, pos, index)
    if rest.startswith("."):
        return _bad_field(inner, pos)
    if pos >= len(inner):
        return (f"incomplete reference {_clip(inner)}; {_HOW}", None)
    return (f"unexpected {rest[0]!r} in reference {_clip(inner)}; a path is .field and [index] segments", None)


def _clip(inner: str, limit: int = 40) -> str:
    """The reference for a message, shortened when long."""
    shown = inner if len(inner) <= limit else inner[: limit - 3] + "..."
    return "${" + shown + "}"


def _bad_index(inner: str, pos: int, match: re.Match[str]) -> tuple[str, str | None]:
    body = match.group(1)
    after = inner[pos + len(match.group(0)):]
    if not match.group(0).endswith("]"):
        return (f"missing ] after [{body}", None)
    if body.startswith("-"):
        return (f"negative index [{body}] is not supported; indexes count from [0]", None)
    if body[:1] in ("'", '"'):
        key = body[1:-1]
        if re.fullmatch(r"[A-Za-z_]\w*", key):
            fixed = inner[:pos] + "." + key + after
            return (f"quoted keys are not supported; write .{key}", fixed)
        return ("quoted keys are not supported; a path field is .name with letters, digits and _", None)
    return (f"an index is a whole number in brackets, like [0], not [{body}]", None)


def _bad_field(inner: str, pos: int) -> tuple[str, str | None]:
    after = inner[pos + 1:]
    if after[:1].isdigit():
        digits = re.match(r"\d+", after).group(0)  # type: ignore[union-attr]
        fixed = inner[:pos] + f"[{digits}]" + after[len(digits):]
        return (f"a field name cannot start with a digit; write [{digits}] for an index", fixed)
    if not after or after[0] in ".[":
        return ("empty field name after '.'", None)
    return (f"unexpected {after[0]!r} after '.'; field names use letters, digits and _", None)


# -- slips and look-alikes ------------------------------------------------------------------------

#: words written where a step's ``.output`` belongs (``${build.result}``)
OUTPUT_SLIPS = frozenset({"outputs", "result", "results", "out", "value", "response"})


def _slip(ref: Ref) -> RefError | None:
    name, path = ref.name or "", ref.path
    fixed: str | None = None
    if name in ("item", "prev") and path:
        message = (
            f"templates cannot read into ${{{name}}}: use ${{{name}}} whole, or read "
            f"{name}{format_path(path)} in an expression (when/ensure)"
        )
    elif name in ("steps", "result", "results") and len(path) >= 1 and isinstance(path[0], str):
        rest = path[2:] if path[1:2] == ("output",) else path[1:]
        fixed = _inner("step", path[0], rest)
        message = f"step outputs are written ${{{fixed}}}"
    elif path and path[0] in OUTPUT_SLIPS:
        fixed = _inner("step", name, path[1:])
        message = f"a step's result is .output: did you mean ${{{fixed}}}?"
    elif name == "inputs" and path and isinstance(path[0], str):
        fixed = _inner("input", None, path)
        message = f"input fields are written ${{{fixed}}}"
    elif name == "input":
        message = "${input} alone is not a reference: name a field, like ${input.topic}"
    else:
        return None
    return RefError(message, ref.span, replacement="${" + fixed + "}" if fixed and _parses(fixed) else None)


_PATH = r"(?:\.[A-Za-z_]\w*|\[\d+\])"
_LOOKALIKE = rf"(?:input{_PATH}+|[a-z][a-z0-9_-]*\.output{_PATH}*|item|prev)"
_MUSTACHE = re.compile(r"\{\{\s*(" + _LOOKALIKE + r")\s*\}\}")
_BARE = re.compile(r"(?<![$\w])\$(" + _LOOKALIKE + r")(?![\w{])")


def _hints(text: str) -> tuple[RefError, ...]:
    taken = [m.span() for m in _REF.finditer(text, 0, text.rfind("}") + 1)]
    hints: list[RefError] = []
    for pattern, what in ((_MUSTACHE, "{{...}} is literal text"), (_BARE, "a $ without braces is literal text")):
        for match in pattern.finditer(text):
            if any(s <= match.start() < e for s, e in taken):
                continue
            fixed = "${" + match.group(1) + "}"
            hints.append(RefError(f"{what}; write {fixed} to reference a value", match.span(), replacement=fixed))
    hints.sort(key=lambda h: h.span or (0, 0))
    return tuple(hints)
