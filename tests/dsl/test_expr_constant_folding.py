"""Constant sub-expressions that always fail are reported at load time, as the runtime says.

Only sub-expressions made of literals (and pure builtin calls over them) are folded, never
names; one that cannot run (the right side of ``false && ...``) is not reported.
"""

from __future__ import annotations

import textwrap

import pytest
from checks_support import P, errors, flow, only
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl import load
from lockgate.dsl.expr import check, compile, evaluate, parse
from lockgate.dsl.expr.folding import constant_errors
from lockgate.errors import ExprError

ALLOWED = {"result", "input"}


def _runtime(source: str, values: dict | None = None) -> tuple[str, str, tuple[int, int] | None]:
    with pytest.raises(ExprError) as caught:
        evaluate(source, values or {})
    return caught.value.kind, caught.value.message, caught.value.span


def _static(source: str) -> list[tuple[str, str, tuple[int, int] | None]]:
    return [(e.kind, e.message, e.span) for e in compile(source).static_errors(ALLOWED)]


@pytest.mark.parametrize("source", [
    "1 && true", "true && 1", "'a' < 1", "-'x'", "!1", "len(3)", "1 / 0", "1e308 * 10", "'a' + 1",
    "max(1)", "min(1)", "int('x')", "'a'.b", "'abc'[0]", "1 in 2", "1 in 'a'",
    "(1 < 2) < 3", "!(1 && true)", "len(1) || true", "matches(1, 'a')", "true && (1 < 'a')",
    "false || -'x'",
])
def test_a_literal_expression_that_fails_is_reported_as_the_runtime_reports_it(source) -> None:
    assert _static(source) == [_runtime(source)]


@pytest.mark.parametrize(("source", "values"), [
    ("result.ok && len(3) > 0", {"result": {"ok": True}}),
    ("result.ok || 'a' < 1", {"result": {"ok": False}}),
    ("len(result.items) + len(4) > 0", {"result": {"items": []}}),
    ("result.x == -'x'", {"result": {"x": 1}}),
    ("matches(result.s, str(1 / 0))", {"result": {"s": "a"}}),
])
def test_a_failing_constant_part_of_a_larger_expression_is_reported(source, values) -> None:
    assert _static(source) == [_runtime(source, values)]


@pytest.mark.parametrize("source", [
    "false && (1 < 'a')",  # the right side never runs
    "true || len(3)",
    "false && len(3) && len(4)",
    "result.ok && false && len(3) > 0",  # the left side is never true
    "(false && result.y) && (1 < 'a')",
    "!(result.a && false) || len(5)",  # the left side is never false
    "result.a || true || -'x'",
    "str(1) == '1' && 1 + 2 == 3",  # constant and fine
    pytest.param("+".join(["1"] * 2047) + " > 0", id="a-2047-term-sum"),
    "file_exists(1) || file_contains(2, 3)",  # the file predicates are never folded
    "result.x + 1", "-result.x", "len(result)",  # names are never folded
])
def test_nothing_is_reported_for_parts_that_cannot_run_or_cannot_fail(source) -> None:
    assert _static(source) == []


def test_arity_and_pattern_errors_are_not_reported_twice() -> None:
    assert [e[1] for e in _static("len(1, 2) + 1")] == [
        "len() takes exactly 1 argument (2 given); usage: len(x)"]
    [pattern_error] = _static("matches('x', 'a*a*')")
    assert pattern_error[0] == "validation" and pattern_error[2] == (13, 19)
    assert [e[0] for e in _static("matches(1, 'a*a*')")] == ["validation", "type"]


def test_check_reports_constant_errors_next_to_the_others() -> None:
    found = check("x && len(3)", ALLOWED)
    assert [(e.kind, e.span) for e in found] == [("unknown_identifier", (0, 1)), ("type", (5, 11))]


def test_static_errors_are_stable_across_calls() -> None:
    expression = compile("result.ok && len(3) > 0")
    first = [(e.kind, e.message, e.span) for e in expression.static_errors(ALLOWED)]
    assert [(e.kind, e.message, e.span) for e in expression.static_errors(ALLOWED)] == first


# -- through the validator -------------------------------------------------------------------

def test_the_validator_reports_lg604_at_the_failing_characters() -> None:
    steps = """
        - {id: a, do: x, out: R}
        - {id: b, do: y, out: R, after: [a], when: "result.a.v == 'x' && -'x' < 0"}
    """
    found = only(errors(flow(steps)))
    assert (found.code, found.path, found.span) == ("LG604", P(1, "when"), (21, 25))
    assert found.message == "unary '-' needs a number, received string (in 'when')"


def test_a_short_circuited_right_side_is_not_a_finding() -> None:
    steps = """
        - {id: a, do: x, out: R, ensure: [{expr: "false && (1 < 'a')"}, {expr: "len(result.v) > 0"}]}
    """
    assert errors(flow(steps)) == []


def test_the_document_range_is_that_of_the_literal() -> None:
    text = textwrap.dedent("""\
        version: 1
        contracts: {R: {v: string}}
        flows:
          entry: main
          main:
            input: {}
            output: {from: "${a.output}", contract: R}
            steps:
              - {id: a, do: x, out: R, when: "1 && true"}
        """)
    [diagnostic] = load(text).diagnostics
    line = text.splitlines()[8]
    assert diagnostic.code == "LG604"
    assert (diagnostic.range.start.line, diagnostic.range.start.character) == (8, line.index('"1') + 1)
    assert (diagnostic.range.end.line, diagnostic.range.end.character) == (8, line.index('"1') + 2)


# -- properties ------------------------------------------------------------------------------

@st.composite
def literal_expressions(draw: st.DrawFn, depth: int = 0) -> str:
    leaves = st.sampled_from(["1", "0", "2.5", "'a'", "'ab'", "true", "false", "null", "1e3", "'1'"])
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(leaves)
    kind = draw(st.sampled_from(["binary", "unary", "call", "group"]))
    if kind == "binary":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "&&", "||", "in"]))
        return f"{draw(literal_expressions(depth + 1))} {op} {draw(literal_expressions(depth + 1))}"
    if kind == "unary":
        return draw(st.sampled_from(["!", "-"])) + draw(literal_expressions(depth + 1))
    if kind == "group":
        return f"({draw(literal_expressions(depth + 1))})"
    name = draw(st.sampled_from(["len", "any", "all", "max", "min", "str", "int", "bool", "matches"]))
    argc = 2 if name == "matches" else 1
    return f"{name}({', '.join(draw(literal_expressions(depth + 1)) for _ in range(argc))})"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(literal_expressions())
def test_folding_a_literal_expression_is_running_it(source: str) -> None:
    folded = [(e.kind, e.message, e.span) for e in constant_errors(parse(source), source)]
    try:
        evaluate(source, {})
    except ExprError as error:
        assert folded == [(error.kind, error.message, error.span)]
    else:
        assert folded == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(literal_expressions(), st.booleans(), st.sampled_from(["&&", "||"]))
def test_a_right_side_behind_a_deciding_left_side_is_never_reported(right, ok, op) -> None:
    """``(result.ok && false) && R`` and ``(result.ok || true) || R`` never run R."""
    decided = "false" if op == "&&" else "true"
    source = f"(result.ok {op} {decided}) {op} ({right})"
    assert constant_errors(parse(source), source) == []
    assert evaluate(source, {"result": {"ok": ok}}) is (op == "||")
