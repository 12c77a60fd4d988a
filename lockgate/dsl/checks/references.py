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
from ..graph import ScannedField
from ..ir import Flow, Step
from ..refs import Ref, format_path, scan
from .context import Context
from .reftypes import ref_type_findings
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
        yield from _carry(ctx, flow, field, ref)
    elif ref.kind == "step" and ref.name == step.id and step.id is not None:
        return  # a step reading itself: routing reports LG503
    else:
        yield from ref_type_findings(ctx, flow, field.path, ref)


def _carry(ctx: Context, flow: Flow, field: ScannedField, ref: Ref) -> Iterator[Finding]:
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
    yield _unknown_carry(ctx, flow, declared, field, ref)


def _unknown_carry(ctx: Context, flow: Flow, declared, field: ScannedField, ref: Ref) -> Finding:
    name = ref.name or ""
    slip = ref.slip()
    if slip is not None:
        return Finding("LG407", f"'{name}' is not a declared carry variable: {slip.message}",
                       field.path, span=ref.span, replacement=slip.replacement)
    replacement = hint = None
    if name in flow.step_map:
        misspelled = _misspelled_field(ctx, flow.step_map[name], ref)
        if misspelled is not None:
            return _step_field_typo(name, misspelled, field, ref)
        replacement = "${" + f"{name}.output{format_path(ref.path)}" + "}"
        hint = f"'{name}' is a step; its output is ${{{name}.output}}"
    else:
        guess = did_you_mean(name, declared)
        if guess:
            replacement = "${" + guess + format_path(ref.path) + "}"
    message = f"'{name}' is not a declared carry variable{suffix(replacement)}"
    if not declared and replacement is None:
        hint = "declare it under the entry flow's 'carry', or reference a step output or input"
    return Finding("LG407", message, field.path, span=ref.span, replacement=replacement, hint=hint)


# what ``${<step>.X}`` may read of a step (§3.1): only its output
_STEP_FIELDS = ("output",)


def _misspelled_field(ctx: Context, step: Step, ref: Ref) -> str | None:
    """The step field the first path segment is a near miss of (``outptu`` for ``output``), so
    the fix replaces that segment instead of keeping it after an inserted ``.output``. A
    segment that names a field of the step's output contract is no typo: ``.output`` was
    left out before it (``${build.put}`` for ``${build.output.put}``)."""
    first = ref.path[0] if ref.path else None
    if not isinstance(first, str):
        return None
    contract = ctx.spec.contracts.get(step.out) if isinstance(step.out, str) else None
    if contract is not None and first in contract.fields:
        return None
    return did_you_mean(first, _STEP_FIELDS)


def _step_field_typo(name: str, meant: str, field: ScannedField, ref: Ref) -> Finding:
    typed = ref.path[0]
    replacement = "${" + f"{name}.{meant}{format_path(ref.path[1:])}" + "}"
    return Finding("LG407", f"'{name}.{typed}' reads no field of step '{name}': a step's result is .{meant}"
                            f"{suffix(replacement)}", field.path, span=ref.span, replacement=replacement)
