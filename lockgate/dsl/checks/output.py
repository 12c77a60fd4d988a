"""Flow outputs (§4 item 43): ``output.from`` is exactly one full step-output reference
(``LG708``) that type-checks (``LG403/406/405/404``); a fanout source must be indexed."""

from __future__ import annotations

from collections.abc import Iterator

from ..diagnostics import Finding
from ..refs import scan
from .context import Context
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
            found = f"a reference to {ref.kind}" if ref is not None else repr(out.from_)
            yield Finding(
                "LG708",
                f"output.from must be exactly one full step-output reference like "
                f"'${{final.output}}', found {found}",
                path,
            )
            continue
        yield from ref_type_findings(ctx, flow, path, ref, flow_output=True)
