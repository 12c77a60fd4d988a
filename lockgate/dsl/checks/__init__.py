"""The semantic rules of the spec language as pure checks (Stratum v1 §4, plus lint).

:func:`run_checks` runs every rule over the tolerant IR and returns **all** problems as
:class:`~lockgate.dsl.diagnostics.Finding` values located by YAML path (and by character span
inside a string). Values the schema pass already rejected are ``None`` or empty in the IR and
are skipped, so one real problem gives one finding.

One module per area, each with ``check(ctx) -> Iterator[Finding]``:

- :mod:`.contracts` types and contract names (LG301-303)
- :mod:`.outshape` set keys and evaluate results against their ``out`` contract (LG304-305)
- :mod:`.subflows` entry, run, with, recursion, nesting (LG701-705)
- :mod:`.steps` duplicate ids (LG501)
- :mod:`.routing` unknown and self targets, cycles (LG502-504)
- :mod:`.references` ``${...}`` in scanned fields (LG401-410)
- :mod:`.expressions` expression fields (LG601-606)
- :mod:`.fanout` consumer worktree fanouts (LG706-707)
- :mod:`.carry` carry variables (LG711-719)
- :mod:`.gates` revision rounds and ancestors (LG505-506)
- :mod:`.output` flow outputs (LG708 and reference typing)
- :mod:`.lint` advisory warnings (LG901-906), only with ``lint=True``
"""

from __future__ import annotations

from collections.abc import Collection

from ..diagnostics import Finding
from ..ir import Spec
from . import carry, contracts, expressions, fanout, gates, output, outshape, references, routing, steps, subflows
from . import lint as lint_rules
from .context import BUILTIN_AGENTS, Context

__all__ = ["BUILTIN_AGENTS", "run_checks"]

_RULES = (contracts, outshape, subflows, steps, routing, references, expressions, fanout, carry, gates, output)


def run_checks(spec: Spec, *, agents: Collection[str] | None = None, lint: bool = True) -> list[Finding]:
    """Every semantic problem of ``spec`` (and, with ``lint``, every warning).

    ``agents`` names agents configured beyond the built-in ``claude`` and ``codex`` (for the
    unknown-agent lint). Pure and total: it never raises on any IR ``build_spec`` produces.
    """
    ctx = Context.of(spec, agents)
    modules = (*_RULES, lint_rules) if lint else _RULES
    findings: list[Finding] = []
    seen: set[tuple] = set()
    for module in modules:
        for finding in module.check(ctx):
            key = (finding.code, finding.path, finding.span, finding.message)
            if key not in seen:
                seen.add(key)
                findings.append(finding)
    return findings
