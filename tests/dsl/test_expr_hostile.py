"""Hostile and edge-case inputs: results as JavaScript gives them, only ExprError, linear time."""

from __future__ import annotations

import time

import pytest

from lockgate.dsl.expr import Bindings, evaluate
from lockgate.errors import ExprError


def _shared_tree(levels: int) -> list:
    """A list whose two elements are the same object, ``levels`` deep: 2**levels paths."""
    value: list = [1]
    for _ in range(levels):
        value = [value, value]
    return value


def test_a_value_with_shared_parts_is_validated_once_per_object() -> None:
    started = time.perf_counter()
    assert evaluate("len(result)", {"result": _shared_tree(60)}) == 2
    assert time.perf_counter() - started < 2


def test_a_too_deep_value_with_shared_parts_is_a_depth_error_not_a_hang() -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("len(result)", {"result": _shared_tree(130)})
    assert caught.value.kind == "resource_limit"


def test_a_cycle_through_shared_parts_is_still_found() -> None:
    inner: list = []
    outer = [inner, inner, inner]
    inner.append(outer)
    with pytest.raises(ExprError, match="contains a cycle"):
        evaluate("len(result)", {"result": outer})


def test_a_large_plain_value_is_valid() -> None:
    value = [list(range(10)) for _ in range(60_000)]
    assert evaluate("len(result)", {"result": value}) == 60_000
    assert evaluate("result[59999][9]", {"result": value}) == 9


@pytest.mark.parametrize(("source", "expected"), [
    ("str(result)", "9007199254740992"),  # String(9007199254740993) in JS: rounded to a double
    ("result == 9007199254740992", True),
    ("result in input", True),
    ("str(input[0] - 1)", "9007199254740991"),
])
def test_integers_beyond_2_53_are_doubles_as_in_javascript(source, expected) -> None:
    bindings = {"result": 2**53 + 1, "input": [2**53]}
    assert evaluate(source, bindings) == expected
    assert evaluate(source, Bindings(bindings)) == expected


def test_rounding_copies_the_value_and_leaves_the_caller_s_alone() -> None:
    value = {"id": 12345678901234567890, "n": 1}
    assert evaluate("result.id == 12345678901234567890", {"result": value}) is True
    assert evaluate("str(result)", {"result": value}) == '{"id":12345678901234567000,"n":1}'
    assert value["id"] == 12345678901234567890


def test_string_sums_take_linear_time() -> None:
    started = time.perf_counter()  # 16,384,000 characters: within the 16 Mi a sum may build
    total = evaluate("+".join(["result"] * 2048), {"result": "a" * 8_000})
    assert len(total) == 2048 * 8_000
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize(("source", "message"), [
    ("'a' + 'b' + 1", "'+' needs two numbers or two strings, received string and number"),
    ("'a' + 'b' + 'c' + null", "'+' needs two numbers or two strings, received string and null"),
    ("1 + 2 + 'c'", "'+' needs two numbers or two strings, received number and string"),
])
def test_a_sum_chain_reports_the_failing_term(source, message) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate(source, {})
    assert caught.value.message == message
    assert caught.value.span == (0, len(source))


def test_mixed_sum_chains_keep_their_values() -> None:
    assert evaluate("'a' + 'b' + 'c'", {}) == "abc"
    assert evaluate("1 + 2 + 3.5", {}) == 6.5
    assert evaluate("'a' + str(1 + 2) + 'c'", {}) == "a3c"


@pytest.mark.parametrize("digits", [301, 309, 310, 400, 5000])
def test_int_of_a_long_digit_string_is_a_double_or_a_type_error(digits) -> None:
    text = "1" * digits
    if digits <= 309:
        assert evaluate("int(result)", {"result": text}) == float(text)
    else:
        with pytest.raises(ExprError, match="int\\(\\) result is not a finite number"):
            evaluate("int(result)", {"result": text})


def test_int_of_zero_padded_text_is_an_integer() -> None:
    assert evaluate("int(result)", {"result": "0" * 500 + "12"}) == 12
    assert type(evaluate("int(result)", {"result": "-" + "0" * 500 + "12"})) is int


@pytest.mark.parametrize("index", ["9" * 5000, "99999999999999999999999"])
def test_a_huge_index_literal_is_out_of_bounds(index) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate(f"result[{index}]", {"result": [1]})
    assert caught.value.kind == "type"
    assert caught.value.message.startswith(f"index {index[:20]}")
    assert caught.value.message.endswith("is out of bounds for result (length 1)")


def test_str_escapes_lone_surrogates_as_json_stringify_does() -> None:
    value = {"k\ud800": ["\udfff", "\U0001F600", "\u00e9\n", "\ud83d\ude00x"]}
    assert evaluate("str(result)", {"result": value}) == (
        '{"k\\ud800":["\\udfff","\U0001F600","\u00e9\\n","\ud83d\ude00x"]}')
