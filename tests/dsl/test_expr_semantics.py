"""The semantics table of reference §5.5-5.6 and the expression sharp edges of §8."""

from __future__ import annotations

import pytest

from lockgate.dsl.expr import evaluate
from lockgate.dsl.values import UNDEFINED
from lockgate.errors import ExprError

BINDINGS = {
    "result": {
        "score": 0.93, "n": 4, "zero": 0, "name": "alpha", "empty": "", "tags": ["a", "b"],
        "items": [{"id": 1}, {"id": 2}], "obj": {"k": 1, "in_key": True}, "nested": {"a": {"b": [10, 20]}},
        "flags": [True, False], "nums": [3, 1.5, 7], "words": ["pear", "apple"], "emoji": "a😀",
        "null": None, "true": "member named true", "mixed": [1, "a"], "nothing": [],
    },
    "input": {"x": 7, "s": "text", "list": [1, [2, {"z": None}]]},
}

VALUES = [
    # literals and keywords
    ("true", True), ("false", False), ("null", None), ("0", 0), ("1.5", 1.5), ("1e3", 1000),
    ("2E-1", 0.2), ("'single'", "single"), ('"dq"', "dq"), (r'"a\nb"', "a\nb"),
    (r'"\u00e9\/"', "é/"), (r"'\uD83D\uDE00'", "😀"), (r'"it\'s"', "it's"),
    # member access and indexes
    ("result.n", 4), ("result.nested.a.b[1]", 20), ("result.items[0].id", 1),
    ("input.list[1][1].z", None), ("result.true", "member named true"), ("result.null", None),
    ("(result).n", 4), ("(result.nested).a.b[0]", 10),
    # logic: booleans only, short-circuit
    ("true && false", False), ("true || false", True), ("!false", True), ("!!true", True),
    ("false && missing.x", False), ("true || 1", True), ("false && 1", False),
    ("true && true && false", False), ("false || false || true", True),
    ("true && (false || true)", True), ("false || true && false", False),
    # equality is deep JSON equality
    ("2 == 2.0", True), ("1 != '1'", True), ("1 == '1'", False), ("null == null", True),
    ("true == 1", False), ("false == 0", False), ("result.flags[0] == 1", False),
    ("result.tags == result.tags", True), ("input.list[1][1] == input.list[1][1]", True),
    ("result.obj != result.nested", True), ("result.zero == 0", True), ("'a' == 'a'", True),
    ("1 == 1 == true", True), ("result.null == null", True), ("result.null != 0", True),
    # ordering: numbers or strings, strings by UTF-16 code unit
    ("1 < 2", True), ("2 <= 2.0", True), ("3 > 2.5", True), ("1 >= 2", False),
    ("'alpha' < 'beta'", True), ("'b' > 'abc'", True), ("'Z' < 'a'", True),
    (r"'\uffff' < '😀'", False), ("result.score >= 0.8", True),
    # arithmetic
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("10 - 4 - 3", 3), ("8 / 4 / 2", 1), ("7 / 2", 3.5),
    ("4 / 2", 2), ("-result.n", -4), ("- -3", 3), ("-(1 - 3)", 2), ("'a' + 'b'", "ab"),
    ("0.1 + 0.2", 0.30000000000000004), ("2 * 0.5", 1), ("9007199254740992 + 2", 9007199254740994.0),
    # in
    ("'a' in result.tags", True), ("'c' in result.tags", False), ("1 in result.nums", False),
    ("1.5 in result.nums", True), ("3.0 in result.nums", True), ("true in result.nums", False),
    ("result.items[0] in result.items", True),
    ("'lph' in result.name", True), ("'' in result.empty", True), ("'k' in result.obj", True),
    ("'toString' in result.obj", False), ("'in_key' in result.obj", True),
    ("null in result.nothing", False),
    # builtins
    ("len('abc')", 3), ("len(result.emoji)", 3), ("len(result.tags)", 2), ("len(result.obj)", 2),
    ("len('')", 0), ("any(result.flags)", True), ("all(result.flags)", False),
    ("any(result.nothing)", False), ("all(result.nothing)", True), ("all(result.tags)", True),
    ("any(input.list)", True), ("max(result.nums)", 7), ("min(result.nums)", 1.5),
    ("max(result.words)", "pear"), ("min(result.words)", "apple"),
    ("str(4/2)", "2"), ("str(1e3)", "1000"), ("str(-0)", "0"), ("str(2.5)", "2.5"),
    ("str(null)", "null"), ("str(true)", "true"), ("str('s')", "s"), ("str(1e21)", "1e+21"),
    ("str(0.000001)", "0.000001"), ("str(1e-7)", "1e-7"), ("str(123e-20)", "1.23e-18"),
    ("str(result.tags)", '["a","b"]'), ("str(result.nested)", '{"a":{"b":[10,20]}}'),
    ("str(result.emoji)", "a😀"), ("str(0.1 + 0.2)", "0.30000000000000004"),
    ("int(true)", 1), ("int(false)", 0), ("int(-2.7)", -2), ("int(2.7)", 2), ("int('007')", 7),
    ("int('+5')", 5), ("int('-12')", -12), ("int(1e300) == 1e300", True),
    ("bool(null)", False), ("bool(0)", False), ("bool(0.5)", True), ("bool('0')", True),
    ("bool('')", False), ("bool(result.nothing)", False), ("bool(result.obj)", True),
    ("bool(false)", False), ("bool(input.list[1][1])", True),
    ("matches(result.name, 'ph')", True), ("matches(result.name, '^ph')", False),
    ("matches('error: x', '.*error.*')", True), ("matches('abba', 'a*ba+')", True),
    ("matches('foobaz', '(foo|bar)baz')", True), ("matches('abab', '^(ab)+$')", True),
    ("matches('ABC', 'abc')", False),
]


@pytest.mark.parametrize(("source", "expected"), VALUES)
def test_value(source: str, expected: object) -> None:
    value = evaluate(source, BINDINGS)
    assert value == expected
    assert type(value) is type(expected)


ERRORS = [
    # strict logic: no truthiness
    ("false || 1", "type"), ("1 && true", "type"), ("!1", "type"), ("!null", "type"),
    ("true && 'x'", "type"), ("result.n || true", "type"),
    # comparisons do not chain, and need two numbers or two strings
    ("1 < 2 < 3", "type"), ("1 < 'a'", "type"), ("true < false", "type"), ("null <= null", "type"),
    ("result.tags > 1", "type"), ("result.obj >= result.obj", "type"),
    # arithmetic
    ("1 + '1'", "type"), ("'a' - 'b'", "type"), ("true + 1", "type"), ("null * 2", "type"),
    ("1 / 0", "type"), ("1 / -0", "type"), ("1e308 * 10", "type"), ("1e308 + 1e308", "type"),
    ("-'a'", "type"), ("-true", "type"), ("result.tags + result.tags", "type"),
    # in
    ("1 in 'abc'", "type"), ("1 in result.obj", "type"), ("'a' in 1", "type"),
    ("'a' in null", "type"), ("'__proto__' in result.obj", "validation"),
    ("'constructor' in result.obj", "validation"),
    # member access and indexes
    ("result.missing", "type"), ("result.tags.length", "type"), ("result.name.x", "type"),
    ("result.null.x", "type"), ("result.tags[2]", "type"), ("result.obj[0]", "type"),
    ("result.name[0]", "type"), ("result.n[0]", "type"), ("result.items[0].nope", "type"),
    # builtins: types and exact arity
    ("len(1)", "type"), ("len(null)", "type"), ("len()", "type"), ("len('a', 'b')", "type"),
    ("any(result.obj)", "type"), ("all('abc')", "type"), ("max(result.nothing)", "type"),
    ("max(result.mixed)", "type"), ("min(result.flags)", "type"), ("min(1)", "type"),
    ("int(' 5')", "type"), ("int('1e3')", "type"), ("int('2x')", "type"), ("int(null)", "type"),
    ("int(result.tags)", "type"), ("int('')", "type"), ("str()", "type"), ("bool(1, 2)", "type"),
    ("matches(1, 'a')", "type"), ("matches('a', 1)", "type"), ("matches('a')", "type"),
    ("matches('a', '(')", "validation"), ("matches('a', 'a{')", "validation"),
    ("matches('a', 'a**')", "validation"), ("matches('a', '[a-')", "validation"),
    ("matches('a', '\\\\p{L}')", "validation"), ("matches('a', 'a{2,1}')", "validation"),
    ("file_exists('x')", "validation"), ("file_contains('x', 'y')", "validation"),
    ("file_exists(1)", "type"),
    # names
    ("True", "unknown_identifier"), ("None", "unknown_identifier"), ("foo.bar", "unknown_identifier"),
    ("item", "unknown_identifier"), ("prev.x", "unknown_identifier"),
]


@pytest.mark.parametrize(("source", "kind"), ERRORS)
def test_error_kind(source: str, kind: str) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate(source, BINDINGS)
    assert caught.value.kind == kind
    assert caught.value.span is not None


def test_error_spans_point_at_the_failing_part() -> None:
    source = "result.n > 1 && result.nested.a.missing == 3"
    with pytest.raises(ExprError) as caught:
        evaluate(source, BINDINGS)
    start, end = caught.value.span
    assert source[start:end] == "result.nested.a.missing"
    assert caught.value.message == "result.nested.a has no member 'missing'"


def test_logical_operand_errors_point_at_the_operand() -> None:
    source = "true && result.n"
    with pytest.raises(ExprError) as caught:
        evaluate(source, BINDINGS)
    assert source[slice(*caught.value.span)] == "result.n"
    assert caught.value.message == "'&&' needs booleans, received number"


def test_undefined_binding_is_a_type_error_even_against_null() -> None:
    """prev at fanout stage 0 is present but undefined: reading it fails, so prev == null fails."""
    with pytest.raises(ExprError) as caught:
        evaluate("prev == null", {"prev": UNDEFINED})
    assert caught.value.kind == "type"
    assert "is not a JSON value" in caught.value.message
    assert evaluate("false && prev == null", {"prev": UNDEFINED}) is False


def test_binding_depth_is_checked_on_any_read() -> None:
    deep: object = 1
    for _ in range(129):
        deep = [deep]
    with pytest.raises(ExprError) as caught:
        evaluate("len(result) == 1", {"result": deep})
    assert caught.value.kind == "resource_limit"
    assert evaluate("len(result) == 1", {"result": deep[0]}) is True  # 128 levels are fine


@pytest.mark.parametrize("value", [float("nan"), float("inf"), (1, 2), {1: "a"}, {"a": {1, 2}}, object()])
def test_non_json_bindings_are_type_errors(value: object) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("result == 1", {"result": value})
    assert caught.value.kind == "type"


def test_cyclic_binding_is_a_type_error() -> None:
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ExprError) as caught:
        evaluate("len(result)", {"result": cycle})
    assert caught.value.kind == "type"
    assert "cycle" in caught.value.message


def test_integers_beyond_doubles_are_rounded_or_not_finite() -> None:
    assert evaluate("str(result)", {"result": [2**70]}) == "[1.1805916207174113e+21]"
    for source in ("str(result)", "result + 1", "result == 1", "int(result)"):
        with pytest.raises(ExprError) as caught:
            evaluate(source, {"result": [-10**400]})
        assert caught.value.kind == "type"
        assert caught.value.message == "'result' is not a JSON value (the number -inf is not finite)"


def test_bool_is_not_a_number() -> None:
    assert evaluate("result == 1", {"result": True}) is False
    assert evaluate("result == true", {"result": True}) is True
    with pytest.raises(ExprError):
        evaluate("result + 1", {"result": True})
    assert evaluate("max(result)", {"result": [1, 2.5]}) == 2.5


def test_when_reads_other_steps_through_result() -> None:
    bindings = {"result": {"build": {"value": 3}}, "input": {}}
    assert evaluate("result.build.value == 3", bindings) is True
    with pytest.raises(ExprError):
        evaluate("result.test.value == 3", bindings)
