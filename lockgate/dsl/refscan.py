"""The reference model and scanning: :class:`Ref` and :class:`Template`, and :func:`scan`,
which finds the ``${...}`` references of a string (Stratum v1 §3.1).

:func:`scan` finds references with the non-nested rule ``\\$\\{([^}]*)\\}`` and parses each
inside: the common shape (a lowercase name, then ``.field`` and ``[n]`` segments) directly, the
rest with ``grammar/template.lark``. It never raises: malformed references become
:class:`~lockgate.errors.RefError` values with the character span of the whole ``${...}``, and
look-alikes that are not references at all (``{{input.x}}``, ``$input.x``) become ``hints``
(the messages come from :mod:`.refslips`). Scans are cached by text, because the engine renders
the same templates on every transition and validation scans the same strings again after an edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from ..errors import RefError
from .refslips import _hints, _slip, _syntax_error
from .refsyntax import _REF, PathPart, RefKind, Span, _inner, _parse_inner

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


# -- scanning -------------------------------------------------------------------------------------


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
