"""Property tests: whatever the input, only ExprError escapes, and evaluation is deterministic."""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl.expr import compile, evaluate
from lockgate.dsl.expr.equality import json_equal
from lockgate.errors import ExprError

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = ["result", "input", "item", "prev", "x", ".", "[", "]", "(", ")", ",", "0", "1", "2.5",
          "1e3", "'a'", '"b"', "true", "false", "null", "==", "!=", "<", "<=", ">", ">=", "+", "-",
          "*", "/", "!", "&&", "||", "in", "len", "any", "all", "max", "min", "str", "int", "bool",
          "matches", "file_exists", "'(a+)+'", "'^[a-z]'", "a", "b", "tags", "n", " ", "=", "%", "?",
          "'", '"', "\\", "${", "}", "__proto__"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "tags", "n"]),
                                                                 inner, max_size=4),
    max_leaves=20,
)
bindings = st.fixed_dictionaries({"result": json_values, "input": json_values, "item": json_values})


def _outcome(source: str, values: dict) -> tuple[str, object]:
    try:
        return "value", evaluate(source, values)
    except ExprError as error:
        assert error.kind in ExprError.KINDS
        return error.kind, error.message


@SETTINGS
@given(st.text(max_size=60))
def test_random_text_raises_only_expr_errors(source: str) -> None:
    try:
        compile(source).evaluate({"result": {}, "input": {}})
    except ExprError as error:
        assert error.kind in ExprError.KINDS
        if error.span is not None:
            assert 0 <= error.span[0] <= error.span[1] <= len(source)


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), max_size=25).map("".join), bindings)
def test_token_soup_raises_only_expr_errors(source: str, values: dict) -> None:
    _outcome(source, values)


def _paths(draw_path: st.DrawFn) -> str:
    root = draw_path(st.sampled_from(["result", "input", "item"]))
    steps = draw_path(st.lists(st.sampled_from([".a", ".b", ".tags", ".n", "[0]", "[1]"]), max_size=3))
    return root + "".join(steps)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    leaves = st.sampled_from(["1", "0", "2.5", "'a'", "'tags'", "true", "false", "null", "1e3"])
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(leaves) if draw(st.booleans()) else _paths(draw)
    kind = draw(st.sampled_from(["binary", "unary", "call", "group"]))
    if kind == "binary":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "&&", "||", "in"]))
        return f"{draw(expressions(depth + 1))} {op} {draw(expressions(depth + 1))}"
    if kind == "unary":
        return draw(st.sampled_from(["!", "-"])) + draw(expressions(depth + 1))
    if kind == "group":
        return f"({draw(expressions(depth + 1))})"
    name = draw(st.sampled_from(["len", "any", "all", "max", "min", "str", "int", "bool", "matches"]))
    argc = 2 if name == "matches" else 1
    return f"{name}({', '.join(draw(expressions(depth + 1)) for _ in range(argc))})"


@SETTINGS
@given(expressions(), bindings)
def test_well_formed_expressions_are_total_and_deterministic(source: str, values: dict) -> None:
    snapshot = copy.deepcopy(values)
    first = _outcome(source, values)
    second = _outcome(source, values)
    assert first[0] == second[0]
    if first[0] == "value":
        assert json_equal(first[1], second[1]) or first[1] is second[1]
    else:
        assert first[1] == second[1]
    assert values == snapshot  # evaluation never mutates bindings


@SETTINGS
@given(json_values, json_values)
def test_equality_is_symmetric_and_reflexive(a: object, b: object) -> None:
    values = {"result": a, "input": b}
    assert evaluate("result == result", values) is True
    assert evaluate("result == input", values) is evaluate("input == result", values)
    assert evaluate("result != input", values) is not evaluate("result == input", values)


@SETTINGS
@given(json_values)
def test_str_of_values_is_stable(value: object) -> None:
    rendered = evaluate("str(result)", {"result": value})
    assert isinstance(rendered, str)
    assert evaluate("str(result)", {"result": copy.deepcopy(value)}) == rendered
