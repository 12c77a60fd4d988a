"""Typing of ``${...}`` references (§3.3): what a step or input reference points at, and
whether its path exists there.

Shared by the reference, flow-output and carry checks, so a reference gets the same codes
wherever it is written: ``LG409`` (a carry name used as a step), ``LG403`` (unknown step),
``LG406`` (fanout without a final ``out``), ``LG405`` (no output contract), ``LG404`` (path
not in the contract, with did-you-mean on the failing segment).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..diagnostics import Finding, Span, YamlPath
from ..contracts import PathError
from ...errors import ContractError
from ..ir import Flow, Step
from ..refs import Ref
from .context import Context
from .suggest import did_you_mean, suffix

@dataclass(frozen=True, slots=True)
class OutputType:
    """What ``${<step>.output...}`` is typed against: a contract name (``root``), reached
    through an array when ``indexed`` (fanout outputs)."""

    root: str
    indexed: bool = False


def ref_type_findings(
    ctx: Context, flow: Flow, path: YamlPath, ref: Ref, *, flow_output: bool = False
) -> Iterator[Finding]:
    """Problems of a well-formed step or input reference written at ``path``.

    Carry, item and prev references are not typed here. ``flow_output`` applies the extra
    rule of ``output.from``: a fanout output must be indexed.
    """
    if ref.kind == "input":
        yield from _input_path(ctx, flow, path, ref)
    elif ref.kind == "step":
        yield from _step_ref(ctx, flow, path, ref, flow_output)


def _step_ref(ctx: Context, flow: Flow, path: YamlPath, ref: Ref, flow_output: bool) -> Iterator[Finding]:
    name = ref.name or ""
    target = flow.step_map.get(name)
    if target is None:
        if name in ctx.carry_vars(flow):
            yield Finding(
                "LG409",
                f"'{name}' is a carry variable, not a step: write ${{{name}}} (or ${{{name}.field}}) "
                f"to read it; '.output' is only for steps",
                path,
                span=ref.span,
                replacement=f"${{{name}{_render_path(ref.path)}}}",
            )
            return
        ids = [s.id for s in flow.steps if s.id is not None]
        guess = did_you_mean(name, ids)
        yield Finding(
            "LG403",
            f"'{name}' is not a step of flow '{flow.name}'{suffix(guess)}",
            path,
            span=_name_span(ref),
            replacement=guess if guess and _valid_step_id(guess) else None,  # an invalid id is LG208's fix
            hint=None if guess else f"steps of '{flow.name}': {', '.join(ids) or 'none'}",
        )
        return
    found = output_type(ctx, flow, target)
    if isinstance(found, Finding):
        yield _at(found, path, ref.span)
        return
    if found is None:
        return  # an unknown contract or callee: reported where it is declared
    segments = list(ref.path)
    if found.indexed:
        if not segments or not isinstance(segments[0], int):
            if segments or flow_output:
                yield Finding(
                    "LG404",
                    f"step '{name}' is a fanout, whose output is an array of per-item results; "
                    f"index it first, like ${{{name}.output[0]{_render_path(segments)}}}",
                    path,
                    span=ref.span,
                    replacement=f"${{{name}.output[0]{_render_path(segments)}}}",
                )
            return
        segments = segments[1:]
        offset = 1
    else:
        offset = 0
    yield from _walk(ctx, found.root, segments, offset, path, ref, f"the output of '{name}' ({found.root})")


def output_type(ctx: Context, flow: Flow, step: Step) -> OutputType | Finding | None:
    """What ``step``'s output is typed against, a Finding (without location) saying why it has
    none, or None when the declared contract is unknown (reported elsewhere)."""
    sid = step.id
    if step.kind in ("do", "set", "evaluate"):
        if step.out is None:
            return Finding(
                "LG405",
                f"step '{sid}' declares no 'out' contract, so its output cannot be referenced; "
                f"add 'out: <Contract>' to '{sid}'",
                (),
            )
        return OutputType(step.out) if step.out in ctx.spec.contracts else None
    if step.kind == "gate":
        return Finding("LG405", f"'{sid}' is a gate, and gates have no output to reference", ())
    if step.kind == "fanout" and step.fanout is not None:
        stages = step.fanout.stages
        if not stages:
            return None
        last = stages[-1]
        if last.out is None:
            return Finding(
                "LG406",
                f"fanout '{sid}' has no 'out' on its last stage, so its output cannot be "
                f"referenced; add 'out: <Contract>' to stage {last.index}",
                (),
                related=((last.at, "the last stage"),),
            )
        return OutputType(last.out, indexed=True) if last.out in ctx.spec.contracts else None
    if step.kind == "run":
        callee = ctx.spec.flows.get(step.run or "")
        if callee is None:
            return None
        if callee.output is None or callee.output.contract is None:
            return Finding("LG405", f"flow '{callee.name}' called by '{sid}' declares no output contract", ())
        contract = callee.output.contract
        return OutputType(contract) if contract in ctx.spec.contracts else None
    return None


def _input_path(ctx: Context, flow: Flow, path: YamlPath, ref: Ref) -> Iterator[Finding]:
    yield from _walk(ctx, flow.input, list(ref.path), 0, path, ref, f"the input of flow '{flow.name}'")


def _walk(ctx: Context, root, segments: Sequence[str | int], offset: int, path: YamlPath, ref: Ref, what: str):
    """LG404 at the first segment of ``segments`` that does not exist under ``root`` (a
    contract name or an inline input mapping); ``offset`` segments of the reference precede."""
    if not ctx.usable(root):
        return
    try:
        ctx.contracts.type_at(root, tuple(segments))
    except PathError as exc:
        bad = exc.segment
        guess = did_you_mean(bad, exc.known) if isinstance(bad, str) else None
        spans = ref.segment_spans
        at = offset + exc.index
        yield Finding(
            "LG404",
            f"{exc.message} ({what}){suffix(guess)}",
            path,
            span=spans[at] if at < len(spans) else ref.span,
            replacement=f".{guess}" if guess else None,
        )
    except ContractError:
        return  # an unknown or broken contract: reported where it is declared


def _valid_step_id(name: str) -> bool:
    from ..schema import spec_schema

    return re.fullmatch(spec_schema()["$defs"]["stepId"]["pattern"], name) is not None


def _name_span(ref: Ref) -> Span:
    return ref.name_span or ref.span


def _render_path(segments: Sequence[str | int]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in segments)


def _at(found: Finding, path: YamlPath, span: Span) -> Finding:
    return Finding(found.code, found.message, path, span=span, hint=found.hint, related=found.related)
