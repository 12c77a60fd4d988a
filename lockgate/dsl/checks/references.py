"""``${...}`` references in the scanned fields of every step (§3.2-3.3, §4 items 16-24, 32).

For each scanned string: malformed syntax (``LG401``), ``fanout.over`` not one full
reference (``LG410``), ``item``/``prev`` outside a fanout stage (``LG402``), carry references in
expression fields (``LG408``) or to undeclared names (``LG407``), then the typing of step and
input references (:mod:`.reftypes`). A step's reference to itself is routing's ``LG503``.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter

from ..diagnostics import Finding
from ..graph import ScannedField, depends_on
from ..ir import Flow, Step
from ..refs import Ref, format_path, scan
from ..refslips import OUTPUT_SLIPS
from .context import Context
from .reftypes import output_type, ref_type_findings
from .suggest import did_you_mean, suffix


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        yield from ctx.per_step("references", flow, _FIELDS, field_findings)


_FIELDS = attrgetter("fields")
_WHERE = {"over": "fanout.over", "evaluate_in": "evaluate.in"}


def field_findings(ctx: Context, flow: Flow, step: Step, field: ScannedField) -> Iterator[Finding]:
    """Every reference problem of one scanned string."""
    template = scan(field.text)
    for error in template.errors:
        yield Finding(
            "LG401", error.message, field.path, span=error.span, replacement=getattr(error, "replacement", None)
        )
    if field.context == "over" and not template.errors and template.full is None:
        yield Finding(
            "LG410",
            "fanout.over must be exactly one full reference to a list, like "
            "'${plan.output.items}' or '${input.files}', with nothing around it",
            field.path,
        )
        return
    for ref in template.refs:
        yield from _ref(ctx, flow, step, field, ref)


def _ref(ctx: Context, flow: Flow, step: Step, field: ScannedField, ref: Ref) -> Iterator[Finding]:
    if ref.kind in ("item", "prev"):
        if not field.in_stage:
            where = _WHERE.get(field.context, f"'{field.context}'")
            yield Finding(
                "LG402",
                f"${{{ref.kind}}} is only bound inside a fanout stage, not in {where}",
                field.path,
                span=ref.span,
            )
    elif ref.kind == "carry":
        yield from _carry(ctx, flow, step, field, ref)
    elif ref.kind == "step" and ref.name == step.id and step.id is not None:
        return  # a step reading itself: routing reports LG503
    else:
        yield from ref_type_findings(ctx, flow, field.path, ref)


def _carry(ctx: Context, flow: Flow, step: Step, field: ScannedField, ref: Ref) -> Iterator[Finding]:
    name = ref.name or ""
    if field.is_expression:
        yield Finding(
            "LG408",
            f"${{{name}}} reads a carry variable, and carry variables cannot be read in "
            f"expressions ('{field.context}'); use it in a 'do' text, a 'with' value or 'evaluate.in'",
            field.path,
            span=ref.span,
        )
        return
    declared = ctx.carry_vars(flow)
    if name in declared:
        return
    entry = ctx.entry
    if entry is not None and entry is not flow and name in entry.carry:
        yield Finding("LG407", f"'{name}' is a carry variable of the entry flow, and carry variables are not "
                               "visible inside a subflow", field.path, span=ref.span,
                      hint=f"pass it in through the run step's 'with' (e.g. {name}: \"${{{name}}}\") and read "
                           "it as an input")
        return
    yield _unknown_carry(ctx, flow, step, declared, field, ref)


def _unknown_carry(ctx: Context, flow: Flow, step: Step, declared, field: ScannedField, ref: Ref) -> Finding:
    name = ref.name or ""
    if name in flow.step_map:
        message, replacement = step_slip(ctx, flow, ref, reader=step.id)
        return Finding("LG407", message, field.path, span=ref.span, replacement=replacement)
    slip = ref.slip()
    if slip is not None:
        return Finding("LG407", f"'{name}' is not a declared carry variable: {slip.message}",
                       field.path, span=ref.span, replacement=slip.replacement)
    guess = did_you_mean(name, declared)
    replacement = "${" + guess + format_path(ref.path) + "}" if guess else None
    message = f"'{name}' is not a declared carry variable{suffix(replacement)}"
    hint = None
    if not declared and replacement is None:
        hint = "declare it under the entry flow's 'carry', or reference a step output or input"
    return Finding("LG407", message, field.path, span=ref.span, replacement=replacement, hint=hint)


# what ``${<step>.X}`` may read of a step (§3.1): only its output
_STEP_FIELDS = ("output",)


def step_slip(ctx: Context, flow: Flow, ref: Ref, *, flow_output: bool = False,
              reader: str | None = None) -> tuple[str, str | None]:
    """Why ``ref``, a carry reference named like a step of ``flow`` (``${build.outptu}``,
    ``${build.result}``), reads nothing, and the reference it most likely meant, or None when
    no guess would be valid.

    The step's output contract is asked first, so a segment naming one of its fields keeps
    its meaning: ``${build.result}`` is ``${build.output.result}`` when Build has ``result``,
    and ``${build.output}`` only when it has not. The guess is then typed along its whole path
    as the reference checks type it (``flow_output``: as ``output.from``, LG708, whose fanout
    source must be indexed); an unknown field on the way is replaced by the one suggestion its
    LG404 makes, and a guess that still does not type-check is no fix: the message says why. So
    is one that ``reader``, the step the reference is written in, cannot wait on: itself (LG503)
    or a step after it (LG504)."""
    name, path = ref.name or "", ref.path
    found = output_type(ctx, flow, flow.step_map[name])
    if isinstance(found, Finding):
        return f"'{name}{format_path(path)}' reads nothing: {found.message}", None
    fields = _fields(ctx, found)
    first = path[0] if path and isinstance(path[0], str) else None
    meant = _meant_path(path, first, fields)
    if meant == path:
        message = f"'{name}' is a step, and a step's result is read through .output"
    else:
        message = f"'{name}.{first}' reads no field of step '{name}': a step's result is .output"
    if meant is None:
        return message + _listing(fields or frozenset(), found), None
    if found is None:
        return message, None  # no contract to type a guess against; it is reported where declared
    if reader is not None and (name == reader or depends_on(flow, name, reader)):
        why = "a step cannot read its own output" if name == reader else f"'{name}' comes after '{reader}'"
        return f"{message}, but '{reader}' cannot read it: {why}", None
    replacement, tried, problem = _typed_guess(ctx, flow, name, meant, flow_output)
    if problem is not None:
        message += f", but {tried} would not be valid either: {problem.message}"
    return message + suffix(replacement), replacement


def _typed_guess(ctx: Context, flow: Flow, name: str, meant, flow_output: bool):
    """``(replacement, tried, problem)`` for ``${<name>.output<meant>}``: the reference when it
    type-checks, with each unknown field on its path replaced by its LG404's suggestion; else
    None, the last reference tried and the first problem it has."""
    for _ in range(len(meant) + 1):
        tried = "${" + f"{name}.output{format_path(meant)}" + "}"
        ref = scan(tried).full
        if ref is None or ref.kind != "step":  # a field name the reference syntax cannot spell
            return None, tried, None
        problem = next(ref_type_findings(ctx, flow, (), ref, flow_output=flow_output), None)
        if problem is None:
            return tried, tried, None
        at = _misspelt_segment(ref, problem)
        if at is None:
            return None, tried, problem
        meant = (*meant[:at], problem.replacement[1:], *meant[at + 1:])
    return None, tried, problem


def _misspelt_segment(ref: Ref, problem: Finding) -> int | None:
    """The index in ``ref.path`` of the field ``problem`` fixes to its one suggestion (an
    LG404 replacing that segment with ``.<field>``), or None for any other problem."""
    if problem.code != "LG404" or not (problem.replacement or "").startswith("."):
        return None
    spans = ref.segment_spans
    return spans.index(problem.span) if problem.span in spans else None


def _listing(fields: frozenset[str], found) -> str:
    """The fields a step's output offers, to end a message that has no guess with."""
    if not fields:
        return ""
    names = ", ".join(sorted(fields))
    return f", an array of results with the fields {names}" if found.indexed else f", with the fields {names}"


def _meant_path(path, first: str | None, fields: frozenset[str] | None):
    """The path after ``.output`` that ``path`` most likely meant, or None for no guess."""
    if first is None or (fields is not None and first in fields):
        return path  # ``.output`` was left out before the path
    if did_you_mean(first, _STEP_FIELDS) or first in OUTPUT_SLIPS:
        return path[1:]  # ``.output`` itself misspelled
    if fields is None:
        return path  # no contract to check against: the likeliest slip is a left-out .output
    if len(path) > 1 and path[1] in fields:
        return path[1:]  # another word where .output belongs (``${build.input.artifact}``)
    guess = did_you_mean(first, fields)
    return (guess, *path[1:]) if guess else None


def _fields(ctx: Context, found) -> frozenset[str] | None:
    """The field names of a step's output contract (of each result, for a fanout's array), or
    None when they are unknown."""
    if found is None:
        return None
    contract = ctx.spec.contracts.get(found.root)
    return frozenset(contract.fields) if contract is not None else None

