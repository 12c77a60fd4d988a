"""``${...}`` references: finding, classifying, resolving and rendering them (Stratum v1 §3).

:func:`scan` finds references with the non-nested rule ``\\$\\{([^}]*)\\}`` and parses each inside
with ``grammar/template.lark``. It never raises: malformed references become
:class:`~lockgate.errors.RefError` values with the character span of the whole ``${...}``, and
look-alikes that are not references at all (``{{input.x}}``, ``$input.x``) become ``hints``.
Scans are cached by text, because the engine renders the same templates on every transition.

Rendering follows §3.4: :func:`render_text` for ``do`` (a full-value reference must be a string;
embedded ones interpolate), :func:`render_value` for ``with`` (full-value leaves keep their JSON
type). Resolved text is spliced by position and never re-scanned.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Literal

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..errors import RefError
from .values import UNDEFINED

__all__ = [
    "UNAVAILABLE",
    "Ref",
    "RefKind",
    "Resolver",
    "Template",
    "format_path",
    "render_text",
    "render_value",
    "resolver",
    "scan",
    "walk_path",
]

Span = tuple[int, int]
PathPart = str | int
RefKind = Literal["input", "step", "carry", "item", "prev"]
Resolve = Callable[["Ref"], Any]

UNAVAILABLE = "reference output is unavailable (the source may have been skipped)"
_REF = re.compile(r"\$\{([^}]*)\}")
_KINDS: dict[str, RefKind] = {
    "item": "item", "prev": "prev", "input_ref": "input", "step_ref": "step", "carry_ref": "carry",
}


# -- values ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ref:
    """One well-formed reference.

    ``name`` is the step id (step refs) or carry name (carry refs), else None. ``path`` is what
    follows ``input``, ``<id>.output`` or the carry name. Spans are character offsets in the
    scanned string: ``span`` covers the whole ``${...}``, ``name_span`` the step id or carry
    name (for rename), ``path_span`` the path text (for completion), and ``segment_spans`` each
    path segment, aligned with ``path``.
    """

    kind: RefKind
    name: str | None
    path: tuple[PathPart, ...]
    span: Span
    full: bool
    raw: str = ""
    name_span: Span | None = None
    path_span: Span = (0, 0)
    segment_spans: tuple[Span, ...] = field(default=())

    @property
    def text(self) -> str:
        """The reference in canonical spelling, e.g. ``${build.output.items[0]}``."""
        return "${" + _inner(self.kind, self.name, self.path) + "}"

    def slip(self) -> RefError | None:
        """A friendly explanation when this carry reference looks like a common slip
        (``${steps.x.output}``, ``${x.outputs}``, ``${input}``, ``${item.name}``...), for the
        validator to use when no such carry exists; None otherwise."""
        return _slip(self) if self.kind == "carry" else None


@dataclass(frozen=True, slots=True)
class Template:
    """The references of one string value, in order, and what is wrong with it.

    ``errors`` make the value invalid (REF_INVALID); ``hints`` are advisory (text that looks
    like a reference but is literal).
    """

    text: str
    refs: tuple[Ref, ...] = ()
    errors: tuple[RefError, ...] = ()
    hints: tuple[RefError, ...] = ()

    @property
    def full(self) -> Ref | None:
        """The reference when the whole string is exactly one ``${...}``."""
        if len(self.refs) == 1 and self.refs[0].full:
            return self.refs[0]
        return None

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def step_ids(self) -> tuple[str, ...]:
        """Ids of the steps read, first occurrence order (the data-dependency edges)."""
        return tuple(dict.fromkeys(r.name for r in self.refs if r.kind == "step" and r.name))


def format_path(path: tuple[PathPart, ...]) -> str:
    """``("a", 0, "b")`` -> ``.a[0].b``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _inner(kind: str, name: str | None, path: tuple[PathPart, ...]) -> str:
    if kind in ("item", "prev"):
        return kind + format_path(path)
    if kind == "input":
        return "input" + format_path(path)
    if kind == "step":
        return f"{name}.output{format_path(path)}"
    return f"{name}{format_path(path)}"


# -- scanning -------------------------------------------------------------------------------------


@cache
def _parser() -> Lark:
    grammar = resources.files("lockgate.dsl").joinpath("grammar/template.lark").read_text("utf-8")
    return Lark(grammar, parser="lalr")


_EMPTY = Template("")


def scan(text: str) -> Template:
    """All references in ``text``, malformed ones as errors. Never raises; cached by text.
    A non-string value has no references."""
    if not isinstance(text, str):
        return _EMPTY
    if "$" not in text and "{{" not in text:
        return Template(text)
    return _scan(text)


@lru_cache(maxsize=8192)
def _scan(text: str) -> Template:
    refs: list[Ref] = []
    errors: list[RefError] = []
    # No reference can start after the last "}"; stopping there keeps a run of unclosed "${"
    # linear instead of quadratic.
    for match in _REF.finditer(text, 0, text.rfind("}") + 1):
        found = _parse_ref(text, match)
        if isinstance(found, Ref):
            refs.append(found)
        else:
            errors.append(found)
    errors.extend(_string_errors(text, has_refs=bool(refs or errors)))
    errors.sort(key=lambda e: e.span or (0, 0))
    return Template(text, tuple(refs), tuple(errors), _hints(text))


def _string_errors(text: str, *, has_refs: bool) -> list[RefError]:
    """The whole-string rules of §3.1: a dangling ``${``, or a last ``${`` after the last ``}``."""
    last_open = text.rfind("${")
    if last_open < 0:
        return []
    if not has_refs:
        return [RefError("unclosed reference: ${ has no closing }", (last_open, len(text)))]
    if last_open > text.rfind("}"):
        return [RefError("unclosed reference: the last ${ has no closing }", (last_open, len(text)))]
    return []


def _parse_ref(text: str, match: re.Match[str]) -> Ref | RefError:
    inner, base = match.group(1), match.start(1)
    end = match.end()
    if inner.startswith("{") and text.startswith("}", end):
        end += 1  # ${{input.x}}: the mustache slip owns its second closing brace too
    span = (match.start(), end)
    full = span == (0, len(text))
    fast = _simple_ref(inner, base, span, full, match.group(0))
    if fast is not None:
        return fast
    tree = _parse_inner(inner)
    if isinstance(tree, UnexpectedInput):
        return _syntax_error(inner, tree, span)
    return _build_ref(tree, base, span, full=full, raw=match.group(0))


_SIMPLE = re.compile(r"([a-z][a-z0-9_-]*)((?:\.[a-zA-Z_][a-zA-Z0-9_]*|\[[0-9]+\])*)")
_SEGMENTS = re.compile(r"\.[a-zA-Z_][a-zA-Z0-9_]*|\[[0-9]+\]")


def _simple_ref(inner: str, base: int, span: Span, full: bool, raw: str) -> Ref | None:
    """The Ref the grammar builds for a reference in the common shape (a lowercase name, then
    ``.field`` and ``[n]`` segments), without running the parser; None for anything else.

    It follows the grammar's lexing: ``item``, ``prev`` and ``input`` are keywords, and
    ``.output`` is the output marker only when no longer field name matches there.
    """
    match = _SIMPLE.fullmatch(inner)
    if match is None:
        return None
    head = match.group(1)
    tokens = [(m.group(), m.start(), m.end()) for m in _SEGMENTS.finditer(inner, match.end(1))]
    first = tokens[0][0] if tokens else None
    if head in ("item", "prev") and first is None:
        kind: RefKind = head  # type: ignore[assignment]
    elif head == "input" and first is not None and first.startswith("."):
        kind = "input"
    elif head != "input" and first == ".output":
        kind = "step"
    else:
        kind = "carry"
    rest = tokens[1:] if kind == "step" else tokens
    name = head if kind in ("step", "carry") else None
    path = tuple(int(t[1:-1]) if t.startswith("[") else t[1:] for t, _, _ in rest)
    path_start = base + len(head) + (len(".output") if kind == "step" else 0)
    return Ref(
        kind, name, path, span, full, raw,
        name_span=(base, base + len(head)) if name is not None else None,
        path_span=(path_start, span[1] - 1),
        segment_spans=tuple((base + a, base + b) for _, a, b in rest),
    )


@lru_cache(maxsize=8192)
def _parse_inner(inner: str) -> Tree[Token] | UnexpectedInput:
    """The parse of one reference's inner text, or the parse error; cached by text, since a
    spec repeats the same few references in many strings (positions are relative to ``inner``)."""
    try:
        return _parser().parse(inner)
    except UnexpectedInput as exc:
        return exc


def _build_ref(tree: Tree[Token], base: int, span: Span, *, full: bool, raw: str) -> Ref:
    kind = _KINDS[str(tree.data)]
    tokens: list[Token] = [t for t in tree.children if isinstance(t, Token)]
    head, rest = tokens[0], tokens[1:]
    if kind == "step":
        rest = rest[1:]  # the .output token
    name = str(head) if kind in ("step", "carry") else None
    path = tuple(_segment(t) for t in rest)
    seg_spans = tuple(_tok_span(t, base) for t in rest)
    path_start = base + (head.end_pos or 0) + (len(".output") if kind == "step" else 0)
    return Ref(
        kind, name, path, span, full, raw,
        name_span=_tok_span(head, base) if name is not None else None,
        path_span=(path_start, span[1] - 1),
        segment_spans=seg_spans,
    )


def _segment(token: Token) -> PathPart:
    value = str(token)
    return int(value[1:-1]) if token.type == "INDEX" else value[1:]


def _tok_span(token: Token, base: int) -> Span:
    return (base + (token.start_pos or 0), base + (token.end_pos or 0))


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


def _parses(inner: str) -> bool:
    try:
        _parser().parse(inner)
    except UnexpectedInput:
        return False
    return True


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

_OUTPUT_SLIPS = frozenset({"outputs", "result", "results", "out", "value", "response"})


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
    elif path and path[0] in _OUTPUT_SLIPS:
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


# -- resolution and rendering ---------------------------------------------------------------------


def walk_path(value: Any, path: tuple[PathPart, ...]) -> Any:
    """Follow ``path`` into ``value``; UNDEFINED as soon as a key or index does not apply
    (an index into a non-list, a key into a non-object, a missing key, an index out of range)."""
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or not 0 <= part < len(value):
                return UNDEFINED
            value = value[part]
        else:
            if not isinstance(value, Mapping) or part not in value:
                return UNDEFINED
            value = value[part]
    return value


@dataclass(frozen=True, slots=True)
class Resolver:
    """Resolves references against one scope: the scope's input, its step outputs (step id ->
    output value; a step with no entry, e.g. skipped, is UNDEFINED), the root's materialised
    carry values, and for a fanout stage the item and the previous stage's output."""

    inputs: Any = UNDEFINED
    outputs: Mapping[str, Any] = field(default_factory=dict)
    carry: Mapping[str, Any] = field(default_factory=dict)
    item: Any = UNDEFINED
    prev: Any = UNDEFINED

    def __call__(self, ref: Ref) -> Any:
        if ref.kind == "input":
            return walk_path(self.inputs, ref.path)
        if ref.kind == "step":
            return walk_path(self.outputs.get(ref.name or "", UNDEFINED), ref.path)
        if ref.kind == "carry":
            if ref.name not in self.carry:
                raise RefError(f'carry variable "{ref.name}" is not materialised', ref.span)
            return walk_path(self.carry[ref.name], ref.path)
        return walk_path(self.item if ref.kind == "item" else self.prev, ref.path)


def resolver(
    inputs: Any,
    outputs: Mapping[str, Any],
    carry: Mapping[str, Any],
    item: Any = UNDEFINED,
    prev: Any = UNDEFINED,
) -> Resolver:
    """The resolve function of a scope (see :class:`Resolver`)."""
    return Resolver(inputs, outputs, carry, item, prev)


def render_text(text: str, resolve: Resolve, values: dict[str, Any] | None = None) -> str:
    """Render a ``do`` template: a full-value reference must resolve to a string; embedded
    references interpolate. Raises RefError for a malformed template, an unavailable value,
    or a full-value non-string. ``values``, when given, receives each reference's value under
    its source text (what the task was rendered from)."""
    template = _checked(text)
    full = template.full
    if full is not None:
        value = _resolved(full, resolve, values)
        if not isinstance(value, str):
            raise RefError(f"do task must render to a string; {full.raw} is {_kind_of(value)}", full.span)
        return value
    return _interpolate(template, resolve, values)


def render_value(value: Any, resolve: Resolve) -> Any:
    """Render a ``with`` value recursively: a full-value string leaf keeps the referenced JSON
    type, embedded references interpolate, mapping keys and non-string leaves are kept."""
    if isinstance(value, str):
        template = _checked(value)
        if template.full is not None:
            return _resolved(template.full, resolve)
        return _interpolate(template, resolve) if template.refs else value
    if isinstance(value, Mapping):
        return {key: render_value(item, resolve) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [render_value(item, resolve) for item in value]
    return value


def _checked(text: str) -> Template:
    template = scan(text)
    if template.errors:
        raise template.errors[0]
    return template


def _resolved(ref: Ref, resolve: Resolve, values: dict[str, Any] | None = None) -> Any:
    value = resolve(ref)
    if value is UNDEFINED:
        raise RefError(UNAVAILABLE, ref.span)
    if values is not None:
        values[ref.raw or ref.text] = value
    return value


def _interpolate(template: Template, resolve: Resolve, values: dict[str, Any] | None = None) -> str:
    parts: list[str] = []
    at = 0
    for ref in template.refs:
        parts.append(template.text[at:ref.span[0]])
        parts.append(_as_text(_resolved(ref, resolve, values), ref))
        at = ref.span[1]
    parts.append(template.text[at:])
    return "".join(parts)


#: ``json.dumps`` with these options builds a new encoder on every call; one built once encodes the
#: same (``encode`` keeps no state between calls, so it is safe to share between threads)
_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _as_text(value: Any, ref: Ref) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        if type(value) is int:
            return int.__repr__(value)  # what the encoder writes for an int, without building it
        return _compact_json(_js_numbers(value))
    except (TypeError, ValueError) as exc:
        raise RefError(f"{ref.raw} is not a JSON value ({exc})", ref.span) from exc


def _js_numbers(value: Any) -> Any:
    """Whole floats print as integers, as JavaScript's JSON.stringify does (2.0 -> 2)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, Mapping):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_numbers(v) for v in value]
    return value


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return f"a {type(value).__name__}"
