"""Flow outputs (§4 item 43): ``output.from`` is exactly one full step-output reference
(``LG708``; a slip of a step's ``.output`` is named and fixed) that type-checks
(``LG403/406/405/404``); a fanout source must be indexed."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding, YamlPath
from ..ir import Flow
from ..refs import Ref, scan
from .context import Context
from .references import step_slip
from .reftypes import ref_type_findings


def check(ctx: Context) -> Iterator[Finding]:
    for flow in ctx.spec.flows.values():
        out = flow.output
        if out is None or out.from_ is None:
            continue  # missing or of the wrong shape: the schema pass reports it
        path = (*out.at, "from")
        template = scan(out.from_)
        if template.errors:
            for error in template.errors:
                yield Finding("LG401", error.message, path, span=error.span)
            continue
        ref = template.full
        if ref is None or ref.kind != "step":
            yield _not_a_step_output(ctx, flow, path, out.from_, ref)
            continue
        yield from ref_type_findings(ctx, flow, path, ref, flow_output=True)


def _not_a_step_output(ctx: Context, flow: Flow, path: YamlPath, text: str, ref: Ref | None) -> Finding:
    """LG708 for ``output.from``. A reference named like a step of the flow is a slip of its
    ``.output`` (``${check.outptu}``), explained and fixed as in templates (:func:`step_slip`)."""
    rule = "output.from must be exactly one full step-output reference like '${final.output}'"
    if ref is not None and ref.kind == "carry" and ref.name in flow.step_map:
        message, replacement = step_slip(ctx, flow, ref, flow_output=True)
        return Finding("LG708", f"{rule}: {message}", path, span=ref.span, replacement=replacement)
    found = f"a reference to {ref.kind}" if ref is not None else repr(text)
    return Finding("LG708", f"{rule}, found {found}", path)
