"""Expression fields (``when``, ``set`` values, ``iterate.until``, ``ensure.expr`` and the
fanout stage ``when``/``ensure``): each compiles (``LG601``, ``LG605``), uses only the
bindings of its context (``LG602``, §5.4) and builtins (``LG603``) with the right number of
arguments (``LG604``), and reads only fields its bindings' contracts have (``LG606``).

Every one is type-checked on ``result`` (``LG604``): operations that cannot type-check on the
contract types it reads (``result.score >= "high"`` for ``score: number``), a condition
(``when``, ``until``, ``ensure``) whose value is certain not to be a boolean, and a ``set`` value
whose kind cannot be its ``out`` field's. In ``ensure`` and ``until`` fields ``result`` is the
step's own output, typed by its ``out`` contract; in ``when``, ``set`` and a stage ``when`` it
maps step ids to outputs, each typed by its step's contract.

Lockgate checks this statically, where the reference engine would fail closed at run time
(a broken ``when`` silently skips its step, a broken ``set`` value becomes ``false``, a broken
``until`` uses up every attempt). A ``${...}`` template in an expression field is
one problem: the reference checks report it, or, when the reference itself is fine, this module
explains that templates are not expressions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from operator import attrgetter
from typing import Any

from ..contracts import PathError
from ..diagnostics import Finding
from ...errors import ContractError, ExprError
from ..expr import compile as compile_expr
from ..expr.builtins import BUILTINS
from ..expr.typecheck import Typed, Typer, kind_of_type, typed, wrong_kind
from ..graph import ScannedField
from ..ir import Flow, Step
from ..refs import scan
from ..types import ArrayOf, Named, TypeExpr, strip_optional
from .context import Context
from .references import field_findings
from .reftypes import OutputType, output_type
from .suggest import did_you_mean, suffix

_CODES = {
    "parse": "LG601",
    "unknown_identifier": "LG602",
    "unknown_function": "LG603",
    "type": "LG604",
    "validation": "LG604",
    "resource_limit": "LG605",
}

BINDINGS: Mapping[str, frozenset[str]] = {
    "when": frozenset({"result", "input"}),
    "set": frozenset({"result", "input"}),
    "until": frozenset({"result", "input"}),
    "ensure": frozenset({"result", "input"}),
    "stage_when": frozenset({"result", "input", "item", "prev"}),
    "stage_ensure": frozenset({"result", "input", "item", "prev"}),
}
_STEP_MAP_CONTEXTS = frozenset({"when", "set", "stage_when"})


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        yield from ctx.per_step("expressions", flow, _EXPRESSIONS, field_expression)


_EXPRESSIONS = attrgetter("expressions")


def field_expression(ctx: Context, flow: Flow, step: Step, field: ScannedField) -> Iterator[Finding]:
    """The expression problems of one expression field."""
    if "${" in field.text:
        yield from _template_in_expression(ctx, flow, step, field)
        return
    try:
        expression = compile_expr(field.text)
    except ExprError as exc:
        yield _from_error(exc, field)
        return
    allowed = set(BINDINGS[field.context])
    if field.stage == 0:
        allowed.discard("prev")
    static = list(expression.static_errors(allowed))
    for exc in static:
        yield _from_error(exc, field)
    found = _typed(ctx, flow, step, field, expression.tree)
    for exc in found.errors:
        yield _from_error(exc, field)
    if not static and found.kind is not None:
        for exc in _value_errors(ctx, step, field, expression.tree, found.kind):
            yield _from_error(exc, field)
    bound = [m for m in expression.member_paths if m.root in allowed]
    yield from _member_paths(ctx, flow, step, field, bound)


# -- types --------------------------------------------------------------------------------------

_CONDITIONS = frozenset({"when", "until", "ensure", "stage_when", "stage_ensure"})


def _typed(ctx: Context, flow: Flow, step: Step, field: ScannedField, tree: Any) -> Typed:
    """The certain type errors and value kind of an expression on its ``result``, computed
    once per expression text and typing of ``result`` in a document (generated and copied
    steps repeat them)."""
    if field.context in _STEP_MAP_CONTEXTS:
        key: Any = (field.text, ("steps", flow.name))
        typer = _step_map_typer(ctx, flow)
    else:
        root = _binding_root(ctx, flow, step, field, "result")
        if root is not None and not ctx.usable(root):
            root = None
        key, typer = (field.text, root), _result_typer(ctx, root)
    try:
        hash(key)
    except TypeError:  # a type that cannot be a key: computed every time
        return typed(tree, field.text, typer)
    found = ctx.type_errors.get(key)
    if found is None:
        found = ctx.type_errors[key] = typed(tree, field.text, typer)
    return found


def _value_errors(ctx: Context, step: Step, field: ScannedField, tree: Any, kind: str) -> Iterator[ExprError]:
    """The error of a value certain to have the wrong kind for its field: a condition that is
    not a boolean, or a ``set`` value that its ``out`` contract's field cannot hold."""
    if field.context in _CONDITIONS:
        if kind != "boolean":
            yield wrong_kind(tree, field.text, kind, "a condition must be true or false")
        return
    if field.context != "set" or step.out is None or not ctx.usable(step.out):
        return
    key = field.path[-1]
    try:
        declared = ctx.contracts.type_at(step.out, (key,))
    except ContractError:
        return  # a key the contract lacks is LG304 (checks.outshape)
    accepted = {kind_of_type(strip_optional(declared))} | ({"null"} if declared.optional else set())
    if None not in accepted and kind not in accepted:
        yield wrong_kind(tree, field.text, kind, f"out contract {step.out} declares {key}: {declared}")


def _result_typer(ctx: Context, root: Any) -> Typer:
    """``(binding, path) -> TypeExpr | None``: the contract type of ``result.<path>`` (``root``
    the type of ``result``); None for every other binding and for whatever the contract does
    not settle."""
    if root is None:
        return lambda name, path: None

    def typer(name: str, path: tuple[str | int, ...]):
        if name != "result":
            return None
        try:
            return ctx.contracts.type_at(root, path)
        except ContractError:
            return None
    return typer


def _step_map_typer(ctx: Context, flow: Flow) -> Typer:
    """The typer of ``result`` in ``when``, ``set`` and stage ``when``: ``result.<step>.<path>``
    is typed by that step's output contract. A step that has no output yet is absent from the
    map, so reading it fails whatever its type. A fanout output is an array whose failed items
    are null, so one whole item is left untyped (a path into it fails on null anyway)."""

    def typer(name: str, path: tuple[str | int, ...]):
        if name != "result" or not path or not isinstance(path[0], str):
            return None
        source = flow.step_map.get(path[0])
        found = output_type(ctx, flow, source) if source is not None else None
        if not isinstance(found, OutputType) or not ctx.usable(found.root):
            return None
        rest = path[1:]
        if found.indexed and len(rest) == 1:
            return None
        try:
            return ctx.contracts.type_at(ArrayOf(Named(found.root)) if found.indexed else found.root, rest)
        except ContractError:
            return None
    return typer


def _template_in_expression(ctx: Context, flow: Flow, step: Step, field: ScannedField) -> Iterator[Finding]:
    if any(True for _ in field_findings(ctx, flow, step, field)):
        return  # the reference checks report this field
    template = scan(field.text)
    span = template.refs[0].span if template.refs else None
    ref = template.refs[0] if template.refs else None
    better = None
    if ref is not None and ref.kind == "step":
        better = "result." + ref.name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in ref.path)
        if field.context in ("ensure", "until", "stage_ensure"):
            better = None  # result is this step's own output here; no mechanical rewrite
    elif ref is not None and ref.kind in ("input", "item", "prev"):
        better = ref.text[2:-1]
    hint = None
    literal = _literal_around(field.text, span) if span is not None else None
    if literal is not None and better is not None:
        if literal == (span[0] - 1, span[1] + 1):
            span = literal  # '${a.output.t}' is a constant string: the fix replaces the quotes too
        else:
            # text around the template in the same literal would need a '+' join that keeps
            # that text, which one replacement of the template cannot write: no fix
            hint = f"the template is part of a string literal: join the literal's text and {better} with '+'"
            better = None
    yield Finding(
        "LG601",
        "${...} templates are not expressions and never evaluate; read values through the "
        f"bindings ({', '.join(sorted(BINDINGS[field.context]))}){suffix(better)}",
        field.path,
        span=span,
        hint=hint,
        replacement=better,
    )


def _literal_around(text: str, span: tuple[int, int]) -> tuple[int, int] | None:
    """The span (quotes included) of the string literal of ``text`` that holds ``span``, or
    None when ``span`` is outside every literal. Escapes are skipped as the lexer does (§5.1);
    an unterminated literal runs to the end of the text."""
    at = 0
    while at < len(text):
        quote = text[at]
        if quote not in "'\"":
            at += 1
            continue
        end = at + 1
        while end < len(text) and text[end] != quote:
            end += 2 if text[end] == "\\" else 1
        end = min(end + 1, len(text))
        if at < span[0] and span[1] <= end:
            return at, end
        at = end
    return None


def _from_error(exc: ExprError, field: ScannedField) -> Finding:
    code = _CODES.get(exc.kind, "LG601")
    replacement = exc.replacement  # the parser's own fix for an operator slip, if any
    message = exc.message
    if exc.kind == "unknown_function" and exc.span is not None and replacement is None:
        name = field.text[exc.span[0] : exc.span[1]].split("(")[0].strip()
        replacement = did_you_mean(name, BUILTINS)
        if replacement and "did you mean" not in message:
            message += suffix(replacement)
    if exc.kind == "unknown_identifier" and field.stage == 0 and "prev" in field.text[slice(*(exc.span or (0, 0)))]:
        message = "prev is not bound at the first stage of a fanout (there is no previous stage)"
    return Finding(code, f"{message} (in '{field.context.replace('stage_', 'stage ')}')", field.path,
                   span=exc.span, replacement=replacement)


# -- member paths -------------------------------------------------------------------------------


def _member_paths(ctx: Context, flow: Flow, step: Step, field: ScannedField, paths) -> Iterator[Finding]:
    for member in paths:
        if member.root == "result" and field.context in _STEP_MAP_CONTEXTS:
            yield from _step_map_path(ctx, flow, step, field, member)
            continue
        root = _binding_root(ctx, flow, step, field, member.root)
        if root is None:
            continue
        yield from _typed_path(ctx, root, tuple(member.path), field, member, member.root)


def _binding_root(ctx: Context, flow: Flow, step: Step, field: ScannedField, name: str) -> Any:
    """The static type of a binding in this field: a TypeExpr, contract name or input
    mapping; None when it is not statically known."""
    if name == "input":
        return flow.input
    stage = step.fanout.stages[field.stage] if field.in_stage and step.fanout is not None else None
    if name == "result":
        out = stage.out if stage is not None else step.out
        return out if out in ctx.spec.contracts else None
    if name == "prev" and stage is not None and field.stage:
        out = step.fanout.stages[field.stage - 1].out
        return out if out in ctx.spec.contracts else None
    if name == "item" and step.fanout is not None:
        return _item_type(ctx, flow, step)
    return None


def _item_type(ctx: Context, flow: Flow, step: Step) -> TypeExpr | None:
    typ = over_type(ctx, flow, step)
    typ = strip_optional(typ) if typ is not None else None
    return typ.element if isinstance(typ, ArrayOf) else None


def over_type(ctx: Context, flow: Flow, step: Step) -> TypeExpr | None:
    """The contract type of what a fanout step's ``over`` reads; None unless it is one full
    step-output or input reference whose path the contracts type."""
    over = scan(step.fanout.over or "").full if step.fanout is not None else None
    if over is None or over.kind not in ("input", "step"):
        return None
    root: Any
    path = tuple(over.path)
    if over.kind == "input":
        root = flow.input
    else:
        source = flow.step_map.get(over.name or "")
        found = output_type(ctx, flow, source) if source is not None else None
        if not isinstance(found, OutputType):
            return None
        root = ArrayOf(Named(found.root)) if found.indexed else found.root
    try:
        return ctx.contracts.type_at(root, path)
    except ContractError:
        return None


def _step_map_path(ctx: Context, flow: Flow, step: Step, field: ScannedField, member) -> Iterator[Finding]:
    """``result.<step>.<path>`` in when/set: the step exists, is not this one, has an output
    and the field."""
    if not member.path:
        return
    name = member.path[0]
    spans = segment_spans(field.text, member)
    if not isinstance(name, str):
        yield Finding("LG606", "result in a 'when' or 'set' maps step ids to outputs; read "
                      "result.<step>, not an index", field.path, span=spans[0])
        return
    source = flow.step_map.get(name)
    if source is None:
        guess = did_you_mean(name, list(flow.step_map))
        yield Finding("LG606", f"result.{name}: '{name}' is not a step of flow '{flow.name}'{suffix(guess)}",
                      field.path, span=spans[0], replacement=f".{guess}" if guess else None)
        return
    if name == step.id:
        yield _self_read(field, name, (member.span[0], spans[0][1]))
        return
    found = output_type(ctx, flow, source)
    if isinstance(found, Finding):
        if source.kind == "gate":
            yield Finding("LG606", f"result.{name}: '{name}' is a gate, and gates have no output",
                          field.path, span=spans[0])
        return
    if found is None:
        return
    root = ArrayOf(Named(found.root)) if found.indexed else found.root
    yield from _typed_path(ctx, root, tuple(member.path[1:]), field, member, f"result.{name}", offset=1)


_SELF_READ = {
    "when": ("its 'when' is evaluated", "the step is skipped"),
    "set": ("its 'set' values are computed", "the value is false"),
    "stage_when": ("its stages run", "the stage is skipped"),
}


def _self_read(field: ScannedField, name: str, span: tuple[int, int]) -> Finding:
    """``result.<this step>``: a step has no output until it has run, and the map holds only
    outputs, so the read is a type error whenever it is evaluated (semantics §8.3), never just a
    race. A short-circuited branch (``input.go || result.c.t == 'x'``) is not always evaluated,
    so the message claims no "always"."""
    during, outcome = _SELF_READ[field.context]
    return Finding("LG606", f"result.{name}: '{name}' is this step, which has no output while {during}: "
                   f"reading result.{name} fails (and {outcome}) whenever this part is evaluated",
                   field.path, span=span,
                   hint="a step cannot read its own output before it runs; to check what it "
                   "returns, use an 'ensure' (there result is the step's own output)")


def _typed_path(ctx: Context, root: Any, path: Sequence[str | int], field: ScannedField, member, shown: str,
                *, offset: int = 0):
    base = root.element.name if isinstance(root, ArrayOf) and isinstance(root.element, Named) else root
    if not ctx.usable(base):
        return
    try:
        ctx.contracts.type_at(root, tuple(path))
    except PathError as exc:
        guess = did_you_mean(exc.segment, exc.known) if isinstance(exc.segment, str) else None
        spans = segment_spans(field.text, member)
        at = offset + exc.index
        yield Finding("LG606", f"{shown}: {exc.message}{suffix(guess)}", field.path,
                      span=spans[at] if at < len(spans) else member.span,
                      replacement=f".{guess}" if guess else None)
    except ContractError:
        return


_SEGMENT = re.compile(r"\s*(\.\s*[A-Za-z_][A-Za-z0-9_]*|\[\s*[0-9]+\s*\])")


def segment_spans(text: str, member) -> list[tuple[int, int]]:
    """The span of each path segment (``.name`` or ``[n]``) of a member chain in ``text``,
    aligned with ``member.path``; the whole chain's span where the text cannot be followed."""
    start, end = member.span
    at = start + len(member.root)
    spans = []
    for _ in member.path:
        match = _SEGMENT.match(text, at, end)
        if match is None:
            return [member.span] * len(member.path)
        spans.append(match.span(1))
        at = match.end()
    return spans
