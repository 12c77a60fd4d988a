"""Resolving and rendering references (Stratum v1 §3.4)."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.dsl.refs import UNAVAILABLE, Ref, Resolver, render_text, render_value, resolver, scan, walk_path
from lockgate.dsl.values import UNDEFINED
from lockgate.errors import RefError

INPUTS = {
    "topic": "tides",
    "b": "${input.topic}",
    "dollar": "$& $' $1 \\1",
    "n": 7,
    "f": 2.0,
    "half": 0.5,
    "flag": True,
    "none": None,
    "obj": {"n": 7, "z": [1, "two", None], "ü": "é"},
    "value": {"x": None},
    "list": [3, 4],
}
OUTPUTS = {"research": {"items": [{"title": "T1"}], "count": 1}, "empty": None}
SCOPE = resolver(INPUTS, OUTPUTS, {"wave": {"k": [10, 20]}}, item={"id": 1}, prev="earlier")


@pytest.mark.parametrize(("path", "expected"), [
    ((), INPUTS),
    (("obj", "z", 1), "two"),
    (("obj", "z", 2), None),
    (("obj", "missing"), UNDEFINED),
    (("list", 5), UNDEFINED),
    (("list", "x"), UNDEFINED),
    (("obj", 0), UNDEFINED),
    (("topic", "x"), UNDEFINED),
    (("none", "x"), UNDEFINED),
])
def test_walk_path_is_undefined_where_a_segment_does_not_apply(path: tuple[Any, ...], expected: Any) -> None:
    assert walk_path(INPUTS, path) == expected  # UNDEFINED compares by identity


def test_walk_path_from_undefined() -> None:
    assert walk_path(UNDEFINED, ("a",)) is UNDEFINED
    assert walk_path(UNDEFINED, ()) is UNDEFINED


@pytest.mark.parametrize(("template", "expected"), [
    ("About ${input.topic}.", "About tides."),
    ("n=${input.n} f=${input.f} h=${input.half} flag=${input.flag}", "n=7 f=2 h=0.5 flag=true"),
    ("obj=${input.obj}", 'obj={"n":7,"z":[1,"two",null],"ü":"é"}'),
    ("list=${input.list}", "list=[3,4]"),
    ("pre ${input.value.x} post", "pre  post"),
    ("none=[${input.none}]", "none=[]"),
    # resolved text is never re-scanned, and regex replacement syntax stays literal
    ("b=${input.b}", "b=${input.topic}"),
    ("d=${input.dollar}", "d=$& $' $1 \\1"),
    ("${research.output.items[0].title}/${research.output.count}", "T1/1"),
    ("${wave.k[1]} ${wave}", '20 {"k":[10,20]}'),
    ("${item} then ${prev}", '{"id":1} then earlier'),
    ("no references at all", "no references at all"),
    ("literal {{input.topic}} and $input.topic", "literal {{input.topic}} and $input.topic"),
])
def test_render_text_interpolates_embedded_references(template: str, expected: str) -> None:
    assert render_text(template, SCOPE) == expected


def test_full_value_do_must_render_to_a_string() -> None:
    assert render_text("${input.b}", SCOPE) == "${input.topic}"
    with pytest.raises(RefError, match="do task must render to a string; \\$\\{input.n\\} is a number") as info:
        render_text("${input.n}", SCOPE)
    assert info.value.span == (0, 10)


@pytest.mark.parametrize("template", [
    "${skipped.output}",
    "x ${skipped.output.a} y",
    "x ${research.output.items[3]} y",
])
def test_undefined_values_make_rendering_fail(template: str) -> None:
    with pytest.raises(RefError) as info:
        render_text(template, SCOPE)
    assert info.value.message == UNAVAILABLE
    assert info.value.span == scan(template).refs[0].span


def test_a_missing_input_says_which_key_the_input_lacks() -> None:
    template = "x ${input.missing} y"
    with pytest.raises(RefError) as info:
        render_text(template, SCOPE)
    assert info.value.message == "reference ${input.missing} is unavailable: the input has no missing"
    assert info.value.span == scan(template).refs[0].span


def test_prev_at_stage_zero_is_unavailable() -> None:
    with pytest.raises(RefError, match="unavailable"):
        render_text("after ${prev}", resolver(INPUTS, {}, {}, item=1))


def test_an_unmaterialised_carry_raises() -> None:
    with pytest.raises(RefError, match='carry variable "wave" is not materialised'):
        render_text("${wave}", resolver(INPUTS, {}, {}))


def test_a_malformed_template_raises_its_first_error() -> None:
    with pytest.raises(RefError, match="spaces are not allowed") as info:
        render_text("x ${ input.topic }", SCOPE)
    assert info.value.span == (2, 18)


def test_render_value_keeps_json_types_of_full_value_leaves() -> None:
    value = {
        "count": "${input.n}",
        "obj": "${input.obj}",
        "nothing": "${input.none}",
        "mixed": ["pre ${input.value.x} post", "${input.list}", "n=${input.n}", 3, None, True],
        "nested": {"keep": "plain", "b": "${input.b}"},
        "${input.topic}": "keys are not rendered",
    }
    assert render_value(value, SCOPE) == {
        "count": 7,
        "obj": INPUTS["obj"],
        "nothing": None,
        "mixed": ["pre  post", [3, 4], "n=7", 3, None, True],
        "nested": {"keep": "plain", "b": "${input.topic}"},
        "${input.topic}": "keys are not rendered",
    }


def test_render_value_fails_on_undefined() -> None:
    with pytest.raises(RefError, match="unavailable"):
        render_value({"a": ["${gone.output}"]}, SCOPE)


def test_a_non_json_value_is_an_error_not_a_crash() -> None:
    weird = Resolver(inputs={"s": {1, 2}})
    with pytest.raises(RefError, match="not a JSON value"):
        render_text("x ${input.s}", weird)


def test_resolver_reads_each_kind() -> None:
    def ref(text: str) -> Ref:
        return scan(text).refs[0]

    assert SCOPE(ref("${input.topic}")) == "tides"
    assert SCOPE(ref("${research.output.count}")) == 1
    assert SCOPE(ref("${empty.output}")) is None
    assert SCOPE(ref("${nope.output}")) is UNDEFINED
    assert SCOPE(ref("${wave.k[0]}")) == 10
    assert SCOPE(ref("${item}")) == {"id": 1}
    assert SCOPE(ref("${prev}")) == "earlier"
