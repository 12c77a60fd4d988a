"""Helpers for the semantic check tests: build a spec from YAML text and run the checks."""

from __future__ import annotations

import textwrap

import yaml

from lockgate.dsl.checks import run_checks
from lockgate.dsl.diagnostics import Finding
from lockgate.dsl.ir import Spec, build_spec


def spec(text: str) -> Spec:
    return build_spec(yaml.safe_load(textwrap.dedent(text)))


def check(text: str, **options) -> list[Finding]:
    return run_checks(spec(text), **options)


def errors(text: str, **options) -> list[Finding]:
    """The findings of ``text`` without lint warnings."""
    return check(text, lint=False, **options)


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def only(findings: list[Finding], code: str | None = None) -> Finding:
    """The single finding (of ``code``); fails with the whole list otherwise."""
    chosen = [f for f in findings if code is None or f.code == code]
    assert len(chosen) == 1, findings
    return chosen[0]


def P(*parts) -> tuple:
    """A YAML path inside flow main: P(1, "after", 0) -> flows.main.steps[1].after[0]."""
    return ("flows", "main", "steps", *parts)


def flow(steps: str, *, contracts: str = "R: {v: string, items: 'string[]', n: integer}",
         extra: str = "", output: str = "${a.output}", inputs: str = "{topic: string}") -> str:
    """A one-flow spec around ``steps`` (YAML, indented by 6 in the result)."""
    body = textwrap.indent(textwrap.dedent(steps).strip("\n"), " " * 6)
    extra_lines = textwrap.indent(textwrap.dedent(extra).strip("\n"), " " * 4) if extra else ""
    return (
        "version: 1\n"
        f"contracts:\n  {contracts}\n"
        "flows:\n"
        "  entry: main\n"
        "  main:\n"
        f"    input: {inputs}\n"
        f"    output: {{from: '{output}', contract: R}}\n"
        f"{extra_lines}\n"
        "    steps:\n"
        f"{body}\n"
    )


def calling_sub(sub: str, *, with_: str = "{}") -> str:
    """A spec whose entry flow ``main`` is one step ``c`` running flow ``sub`` with ``with_``
    (contract R is ``{v: string}``); ``sub`` is the body of flow sub (YAML: input, output, steps, ...)."""
    body = textwrap.indent(textwrap.dedent(sub).strip("\n"), " " * 4)
    return (
        "version: 1\n"
        "contracts: {R: {v: string}}\n"
        "flows:\n"
        "  entry: main\n"
        "  main:\n"
        "    input: {}\n"
        '    output: {from: "${c.output}", contract: R}\n'
        f"    steps: [{{id: c, run: sub, with: {with_}}}]\n"
        "  sub:\n"
        f"{body}\n"
    )
