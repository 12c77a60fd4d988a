"""Rendering ``${...}`` (review s10): an unavailable input, carry, item or prev reference says
where its path stops, not the step wording "skipped, failed or not run yet"; numbers render as
JavaScript's JSON.stringify writes them (stratum-v1-semantics §3.4)."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from lockgate.dsl.expr.jsonvalues import js_number
from lockgate.dsl.refrender import (
    SPACED,
    UNAVAILABLE,
    Resolver,
    json_text,
    json_writer,
    render_text,
    render_value,
)
from lockgate.dsl.refscan import Ref
from lockgate.errors import RefError

SCOPE = Resolver(
    inputs={"x": "X", "l": [10, [20, 21]], "o": {"k": {"z": None}}, "s": "text"},
    outputs={"a": {"v": "x"}},
    carry={"c": {"o": {"k": [1, None]}, "n": 0.5}},
    item={"id": 1},
    statuses={"a": "succeeded"},
)


def engine_like(scope: Resolver):
    """A resolve function shaped like the engine's: its ``fate`` knows only step references."""
    def resolve(ref: Ref) -> Any:
        return scope(ref)

    resolve.fate = lambda ref: None  # type: ignore[attr-defined]
    return resolve


def message(template: str, resolve: Any = SCOPE) -> str:
    with pytest.raises(RefError) as info:
        render_text(template, resolve)
    return info.value.message


@pytest.mark.parametrize(("template", "why"), [
    ("q=${input.q}", "the input has no q"),
    ("${input.o.k.w}", "the input's o.k has no w"),
    ("${input.o.k.z.w}", "the input's o.k.z is null, which has no w"),
    ("${input.l[5]}", "the input's l has no [5]"),
    ("${input.l[1][2]}", "the input's l[1] has no [2]"),
    ("${input.s[0]}", "the input's s is a string, which has no [0]"),
    ("${input.l.k}", "the input's l is an array, which has no k"),
    ("c=${c.o.zz}", "carry c's o has no zz"),
    ("c=${c.zz}", "carry c has no zz"),
    ("zero ${prev}", "no earlier stage gave an output (this is the first stage, or the ones before it were "
                     "skipped)"),
])
@pytest.mark.parametrize("resolve", [SCOPE, engine_like(SCOPE)], ids=["Resolver", "engine-like"])
def test_an_unavailable_reference_says_where_its_path_stops(template: str, why: str, resolve: Any) -> None:
    ref = template[template.index("${"):template.index("}") + 1]
    assert message(template, resolve) == f"reference {ref} is unavailable: {why}"


def test_a_with_value_says_the_same() -> None:
    with pytest.raises(RefError) as info:
        render_value({"n": ["${input.q}"]}, SCOPE)
    assert info.value.message == "reference ${input.q} is unavailable: the input has no q"


def test_step_references_keep_their_messages() -> None:
    assert message("${a.output.w}") == "reference ${a.output.w} is unavailable: step a's output has no w"
    assert message("${gone.output}") == UNAVAILABLE  # a step whose status is not known
    assert message("${gone.output}", engine_like(SCOPE)) == UNAVAILABLE


@pytest.mark.parametrize(("value", "text"), [
    (1e-7, "1e-7"),
    (0.000001, "0.000001"),
    (0.00001234, "0.00001234"),
    (1.5e-10, "1.5e-10"),
    (2.0, "2"),
    (-0.0, "0"),
    (0.25, "0.25"),
    (123456789.123, "123456789.123"),
    (2.4580338977940387e+17, "245803389779403870"),
    (1e21, "1e+21"),
    ({"x": 1e-7}, '{"x":1e-7}'),
    ({"x": 1e-7, "y": [2.0, 0.5, "é", None, True, {}, []], "z": {}}, '{"x":1e-7,"y":[2,0.5,"é",null,true,{},[]],"z":{}}'),
    ([5e-324, 2.0**53], "[5e-324,9007199254740992]"),
])
def test_numbers_render_as_javascript_writes_them(value: Any, text: str) -> None:
    assert render_text("n=${input.n}", Resolver(inputs={"n": value})) == f"n={text}"


def test_every_float_renders_as_the_expression_builtin_str_writes_it() -> None:
    """The C encoder writes most floats; those it writes otherwise than js_number are walked."""
    rng = random.Random(10)
    floats = [0.0, 1e-4, 9.999999999999999e-05, 2.0**53 - 1, 2.0**53, 9.999999999999999e20, 1e16]
    while len(floats) < 20_000:
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        floats.append(bits if bits - bits == 0 else rng.uniform(-1, 1) * 10.0 ** rng.randint(-25, 25))
    assert [json_text(f) for f in floats] == [js_number(f) for f in floats]
    assert json_text({"k": floats}) == '{"k":[' + ",".join(js_number(f) for f in floats) + "]}"


def test_what_is_not_json_still_fails_the_render() -> None:
    for value in ([1e-7, float("nan")], {"a": float("inf")}, [1e-7, {1, 2}], {1, 2}):
        with pytest.raises(RefError, match=r"^\$\{input.v\} is not a JSON value"):
            render_text("v=${input.v}", Resolver(inputs={"v": value}))


def test_spaced_json_keeps_its_spaces_and_javascript_numbers() -> None:
    assert json_writer(SPACED)({"a": [1e-7, 2.0], "b": {"c": 0.5}}) == '{"a": [1e-7, 2], "b": {"c": 0.5}}'
    assert json_writer(SPACED)({"a": [1, "x"]}) == '{"a": [1, "x"]}'
