"""Bound values whose containers are shared (a DAG): ``==``, ``in`` and ``str()`` stay linear.

A list holding the previous level twice, 30 levels deep, is 31 objects but 2**30 paths; walked
as a tree, comparing or printing it never ends. Equality remembers the container pairs it has
decided; ``str()`` measures its text first and refuses one longer than the limit.
"""

from __future__ import annotations

import copy
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl.expr import compile, equality, evaluate, jsonvalues
from lockgate.dsl.expr.limits import MAX_JSON_TEXT_LENGTH
from lockgate.errors import ExprError

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT_MESSAGE = f"str() would build a JSON text longer than {MAX_JSON_TEXT_LENGTH} characters"


def _dag(levels: int, leaf: object = 1) -> list:
    """``levels`` lists, each holding the one below twice."""
    value: list = [leaf]
    for _ in range(levels):
        value = [value, value]
    return value


def _object_dag(levels: int, leaf: object = 1) -> dict:
    value: dict = {"leaf": leaf}
    for _ in range(levels):
        value = {"left": value, "right": value}
    return value


def _timed(source: str, values: dict) -> tuple[object, float]:
    started = time.perf_counter()
    try:
        outcome: object = evaluate(source, values)
    except ExprError as error:
        outcome = error
    return outcome, time.perf_counter() - started


@pytest.mark.parametrize("build", [_dag, _object_dag])
def test_equal_dags_built_apart_compare_in_linear_time(build) -> None:
    outcome, seconds = _timed("result == input", {"result": build(30), "input": build(30)})
    assert outcome is True
    assert seconds < 2


@pytest.mark.parametrize("build", [_dag, _object_dag])
def test_dags_differing_at_the_bottom_are_unequal_in_linear_time(build) -> None:
    values = {"result": build(30), "input": build(30, leaf=2)}
    outcome, seconds = _timed("result != input", values)
    assert outcome is True
    assert evaluate("result == input", values) is False
    assert seconds < 2


def test_a_dag_equals_its_own_parts_compared_inside_one_binding() -> None:
    outcome, seconds = _timed("result[0] == result[1]", {"result": [_dag(30), _dag(30)]})
    assert outcome is True
    assert seconds < 2


def test_in_over_an_array_of_dags_shares_one_memo() -> None:
    values = {"result": [_dag(30, leaf=2)] * 1000 + [_dag(30)], "input": _dag(30)}
    outcome, seconds = _timed("input in result", values)
    assert outcome is True
    assert seconds < 2
    assert evaluate("input in result", {"result": [_dag(30, leaf=2)] * 1000, "input": _dag(30)}) is False


@pytest.mark.parametrize("build", [_dag, _object_dag])
def test_str_of_an_exponentially_long_text_is_a_resource_limit(build) -> None:
    outcome, seconds = _timed("str(result)", {"result": build(30)})
    assert isinstance(outcome, ExprError)
    assert (outcome.kind, outcome.message, outcome.span) == ("resource_limit", LIMIT_MESSAGE, (0, 11))
    assert seconds < 2


def test_the_predicate_wrapper_reports_the_limit_as_its_reason() -> None:
    assert compile("str(result) == ''").holds({"result": _dag(40)}) == (
        False, f"resource_limit: {LIMIT_MESSAGE}")


def test_a_shared_string_repeated_past_the_limit_is_refused() -> None:
    text = "a" * (1 << 20)
    with pytest.raises(ExprError, match="str\\(\\) would build"):
        evaluate("str(result)", {"result": [text] * 17})
    assert len(evaluate("str(result)", {"result": [text] * 15})) == 15 * ((1 << 20) + 3) + 1


def test_str_of_a_small_dag_is_the_text_of_its_tree() -> None:
    value = _object_dag(8)
    assert evaluate("str(result)", {"result": value}) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize(("size", "refused"), [(0, False), (1, True)])
def test_the_limit_counts_utf16_code_units_up_to_the_last(monkeypatch, size, refused) -> None:
    monkeypatch.setattr(jsonvalues, "MAX_JSON_TEXT_LENGTH", 12)
    value = {"\U0001F600": "\u00e9" * 3 + "x" * size}  # {"😀":"ééé"} is 12 code units in JS
    if refused:
        with pytest.raises(ExprError, match="longer than 12 characters"):
            evaluate("str(result)", {"result": value})
    else:
        assert evaluate("str(result)", {"result": value}) == '{"\U0001F600":"\u00e9\u00e9\u00e9"}'


# -- properties ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**15, 10**15)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "é", "😀"]),
                                                                 inner, max_size=4),
    max_leaves=20,
)


def _share(value: object, times: int) -> object:
    """``value`` wrapped ``times`` times in a list holding it twice."""
    for _ in range(times):
        value = [value, value]
    return value


@SETTINGS
@given(json_values, json_values, st.integers(0, 3))
def test_memoised_equality_agrees_with_the_plain_walk(a: object, b: object, times: int) -> None:
    plain = equality.json_equal(a, b)
    decided: dict = {}
    assert equality._shared(_share(a, times), _share(b, times), decided) is plain
    assert equality.json_in(a, [b]) is plain
    assert equality._shared(_share(a, times), _share(copy.deepcopy(a), times), {}) is True


@SETTINGS
@given(json_values, st.integers(0, 3))
def test_the_measured_length_is_the_length_of_the_text(value: object, times: int) -> None:
    shared = _share(value, times)
    if not isinstance(shared, (list, dict)):
        shared = [shared]  # str() of a scalar is String(x), not JSON text
    text = evaluate("str(result)", {"result": shared})
    assert jsonvalues._json_length(shared, {}, {}) == jsonvalues.utf16_len(text)
    assert text == evaluate("str(result)", {"result": copy.deepcopy(shared)})


@SETTINGS
@given(json_values, st.lists(json_values, max_size=4))
def test_in_agrees_with_equality_on_each_element(a: object, items: list) -> None:
    assert evaluate("result in input", {"result": a, "input": items}) is any(
        evaluate("result == input", {"result": a, "input": item}) for item in items)
