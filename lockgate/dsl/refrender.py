"""Resolving references against a scope and rendering templates with them (Stratum v1 §3.4).

:class:`Resolver` reads a reference's value from one scope (input, step outputs, carry, fanout
item and previous stage). :func:`render_text` renders ``do`` (a full-value reference must be a
string; embedded ones interpolate), :func:`render_value` renders ``with`` (full-value leaves keep
their JSON type). Resolved text is spliced by position and never re-scanned. This is the
engine's side of references, run on every dispatch; scanning (:mod:`.refscan`) is shared with
validation and the language server.

A reference whose value is not there fails the render (RefError) saying why. For a step
reference, when the resolve function has a ``fate(ref)`` method (as :class:`Resolver` has), the
message says what happened to the source step ("reference ${sub.output.v} is unavailable: step
sub failed: ..."), else it is :data:`UNAVAILABLE`. Any other reference (input, carry, item,
prev) says where its path stops ("reference ${input.o.k} is unavailable: the input's o has no
k"), found by resolving its root.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import RefError
from .refscan import Ref, Template, scan
from .refsyntax import PathPart, format_path
from .values import UNDEFINED

Resolve = Callable[[Ref], Any]

#: The message of a reference whose value is not there, when nothing more is known of its source.
UNAVAILABLE = "reference output is unavailable (its source has no such value: skipped, failed or not run yet)"

#: What a step in each status did, worded for :func:`source_fate` ("step a <words>").
_FATES = {"pending": "has not run yet", "ready": "has not run yet", "running": "is still running",
          "waiting_gate": "is a gate still waiting for a decision", "skipped": "was skipped", "failed": "failed"}


def source_fate(ref: Ref, status: str | None, reason: Any = None) -> str | None:
    """What happened to the step ``ref`` reads, in words, from its ``status`` (and the
    ``reason`` of its failure): "step sub failed: ...", "step a was skipped", "step a's output
    has no .x"; None for a reference to no step, or a status that explains nothing."""
    if ref.kind != "step" or not ref.name or status is None:
        return None
    if status == "succeeded":
        return f"step {ref.name}'s output has no {format_path(ref.path).lstrip('.')}" if ref.path else None
    words = _FATES.get(status)
    if words is None:
        return None
    why = f": {reason}" if status == "failed" and isinstance(reason, str) and reason else ""
    return f"step {ref.name} {words}{why}"


def unavailable(ref: Ref, fate: str | None) -> str:
    """The message of ``ref`` being unavailable: what happened to its source when ``fate`` (see
    :func:`source_fate` and :func:`missing_part`) says, else :data:`UNAVAILABLE`."""
    return f"reference {ref.raw} is unavailable: {fate}" if fate else UNAVAILABLE


#: Why a reference of these kinds has no value at all: its root is not there.
_NO_ROOT = {"prev": "no earlier stage gave an output (this is the first stage, or the ones before it were "
                    "skipped)"}


def missing_part(ref: Ref, resolve: Resolve) -> str | None:
    """Where the path of ``ref``, an input, carry, item or prev reference that ``resolve`` finds
    no value for, stops, in words: "the input has no q", "carry c's o has no zz", "the input's
    l has no [5]", "the input's o.z is null, which has no w", "no earlier stage gave an
    output (...)"; None for a step reference, or a root that is missing for no known reason."""
    if ref.kind == "step":
        return None
    value = resolve(replace(ref, path=()))
    if value is UNDEFINED:
        return _NO_ROOT.get(ref.kind)
    for at, part in enumerate(ref.path):
        inner = walk_path(value, (part,))
        if inner is UNDEFINED:
            return f"{_where(ref, ref.path[:at])} {_lacks(value, part)}"
        value = inner
    return None


def _where(ref: Ref, path: tuple[PathPart, ...]) -> str:
    """The value ``path`` reaches from the root of ``ref`` (an input or carry reference: ``${item}``
    and ``${prev}`` have no path), in words: "carry c's o.k"."""
    root = f"carry {ref.name}" if ref.kind == "carry" else "the input"
    return f"{root}'s {format_path(path).lstrip('.')}" if path else root


def _lacks(value: Any, part: PathPart) -> str:
    """What ``value`` lacks that ``part`` (one step of a path) asks for: "has no k", "has no [5]",
    or, when ``value`` cannot have it at all, "is null, which has no k"."""
    step = f"[{part}]" if isinstance(part, int) else part
    fits = isinstance(value, list) if isinstance(part, int) else isinstance(value, Mapping)
    return f"has no {step}" if fits else f"is {_kind_of(value)}, which has no {step}"


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
    #: step id -> its status, when known: an unavailable reference then says what happened to it
    statuses: Mapping[str, str] = field(default_factory=dict)

    def fate(self, ref: Ref) -> str | None:
        """What happened to the source of ``ref``, which is unavailable (see :func:`source_fate`)."""
        return source_fate(ref, self.statuses.get(ref.name or "")) if ref.kind == "step" else None

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
        fate = getattr(resolve, "fate", None)  # a resolve function may say what happened to the source
        why = fate(ref) if callable(fate) else None
        raise RefError(unavailable(ref, why or missing_part(ref, resolve)), ref.span)
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


#: The separators (between items, between a key and its value) of compact JSON, as a rendered
#: reference is written (JSON.stringify's), and of JSON spaced for reading in a message.
COMPACT, SPACED = (",", ":"), (", ", ": ")


def json_writer(separators: tuple[str, str] = COMPACT) -> Callable[[Any], str]:
    """A function writing a JSON value as text with ``separators``, non-ASCII kept and numbers as
    JavaScript writes them (:func:`lockgate.dsl.expr.jsonvalues.js_number`, as the expression
    builtin ``str()`` does: 2.0 -> 2, 1e-07 -> 1e-7, 1e-06 -> 0.000001). Like ``json.dumps`` it
    raises TypeError for what is not JSON and ValueError for a number that is not finite.

    The json module's C encoder writes the value, its whole floats below 2**53 made ints first: it
    writes most other floats as js_number does (shortest round-trip digits, the same exponent
    form at 1e21 and beyond), but not those below 1e-4 in size (1e-05 where JavaScript writes
    0.00001, 1e-07 for 1e-7) nor from 2**53 to 1e21 (2.4580338977940387e+17 for
    245803389779403870). A value holding one of those is walked instead, each float written by
    js_number and each other leaf by the encoder."""
    # one encoder built once: json.dumps with options builds one per call (encode keeps no state)
    encode = json.JSONEncoder(separators=separators, ensure_ascii=False, allow_nan=False).encode
    comma, colon = separators

    def write(value: Any) -> str:
        try:
            return encode(_whole_floats_as_ints(value))
        except _OddFloat:
            pass
        # imported here: importing the expression package costs ~20 ms and few values need it
        from .expr.jsonvalues import js_number

        out: list[str] = []

        def walk(value: Any) -> None:
            if isinstance(value, float):
                out.append(js_number(value) if math.isfinite(value) else encode(value))  # encode refuses it
            elif isinstance(value, Mapping):
                for at, (key, item) in enumerate(value.items()):
                    key_text = encode(key if isinstance(key, str) else encode(key))  # a non-string key as json
                    out.append(f"{comma if at else '{'}{key_text}{colon}")
                    walk(item)
                out.append("}" if value else "{}")
            elif isinstance(value, (list, tuple)):
                for at, item in enumerate(value):
                    out.append(comma if at else "[")
                    walk(item)
                out.append("]" if value else "[]")
            else:
                out.append(encode(value))

        walk(value)
        return "".join(out)

    return write


class _OddFloat(Exception):
    """A value holds a float that the json module writes otherwise than JavaScript (see
    :func:`json_writer`)."""


#: Floats from 2**53 (all whole) up to 1e21, which JavaScript writes with zeros after its
#: shortest digits, and below 1e-4 in size, which Python writes 1e-05 (JavaScript 0.00001).
_EXACT_INTS, _JS_EXPONENTS, _PY_EXPONENTS = float(2**53), 1e21, 1e-4


def _whole_floats_as_ints(value: Any) -> Any:
    """``value`` with its whole floats below 2**53 in size as ints (2.0 -> 2, as JavaScript writes
    them); raises _OddFloat at a float that is not zero and is below 1e-4 in size or from 2**53
    to 1e21."""
    if isinstance(value, float):
        size = abs(value)
        if size < _EXACT_INTS and value.is_integer():
            return int(value)
        if 0 < size < _PY_EXPONENTS or _EXACT_INTS <= size < _JS_EXPONENTS:
            raise _OddFloat
        return value
    if isinstance(value, Mapping):
        return {k: _whole_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_whole_floats_as_ints(v) for v in value]
    return value


#: A reference's value as its text in a rendered template: compact JSON, JavaScript's numbers.
json_text = json_writer()


def _as_text(value: Any, ref: Ref) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        if type(value) is int:
            return int.__repr__(value)  # what the encoder writes for an int, without building it
        return json_text(value)
    except (TypeError, ValueError) as exc:
        raise RefError(f"{ref.raw} is not a JSON value ({exc})", ref.span) from exc


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return f"a {type(value).__name__}"
