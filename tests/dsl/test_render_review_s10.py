"""Rendering ``${...}`` (review s10): an unavailable input, carry, item or prev reference says
where its path stops, not the step wording "skipped, failed or not run yet"; numbers render as
JavaScript's JSON.stringify writes them (stratum-v1-semantics §3.4)."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate.dsl.refrender import UNAVAILABLE, Resolver, render_text, render_value
from lockgate.dsl.refscan import Ref
from lockgate.dsl.values import UNDEFINED
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
    ("zero ${prev}", "the first stage has no previous stage"),
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
