"""The contract type language (Stratum v1 §2): what parses, what it means, and how slips are
reported."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl.types import (
    NODES,
    AnyArray,
    AnyObject,
    ArrayOf,
    Enum,
    Named,
    OptionalOf,
    Scalar,
    parse_type,
    strip_optional,
)
from lockgate.errors import ContractError

VALID = [
    ("string", Scalar("string")),
    ("integer", Scalar("integer")),
    ("number", Scalar("number")),
    ("boolean", Scalar("boolean")),
    ("object", AnyObject()),
    ("array", AnyArray()),
    ("string[]", ArrayOf(Scalar("string"))),
    ("string[][]", ArrayOf(ArrayOf(Scalar("string")))),
    ("integer[][]", ArrayOf(ArrayOf(Scalar("integer")))),
    ("Meta[]", ArrayOf(Named("Meta"))),
    ("object[]", ArrayOf(AnyObject())),
    ("a|b|c", Enum(("a", "b", "c"))),
    ("needs work|ok", Enum(("needs work", "ok"))),
    ("(a|b|c)[]", ArrayOf(Enum(("a", "b", "c")))),
    ("(a|b)[][]", ArrayOf(ArrayOf(Enum(("a", "b"))))),
    # `[]` binds looser than `|`, as in the reference engine's right-to-left parse
    ("a|b[]", ArrayOf(Enum(("a", "b")))),
    ("(solo)[]", ArrayOf(Enum(("solo",)))),
    ("Review", Named("Review")),
    ("Review_2", Named("Review_2")),
    ("String", Named("String")),  # capitalised: a contract reference (unknown unless declared)
    ("string?", OptionalOf(Scalar("string"))),
    ("string[]?", OptionalOf(ArrayOf(Scalar("string")))),
    ("Review?", OptionalOf(Named("Review"))),
    ("low|high?", OptionalOf(Enum(("low", "high")))),
    ("(a|b)[]?", OptionalOf(ArrayOf(Enum(("a", "b"))))),
    ("what?|no", Enum(("what?", "no"))),
    ("a?b|c", Enum(("a?b", "c"))),
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_valid_types_parse_to_their_meaning(text: str, expected: object) -> None:
    assert parse_type(text) == expected


@pytest.mark.parametrize(("text", "canonical"), [
    ("string", "string"),
    ("string[]?", "string[]?"),
    ("a|b[]", "(a|b)[]"),
    ("(a|b)[][]", "(a|b)[][]"),
    ("needs work|ok?", "needs work|ok?"),
    ("Meta[]", "Meta[]"),
])
def test_describe_prints_the_canonical_form(text: str, canonical: str) -> None:
    assert parse_type(text).describe() == canonical
    assert parse_type(canonical) == parse_type(text)


def test_spans_locate_each_node() -> None:
    expr = parse_type("Review[]?")
    assert isinstance(expr, OptionalOf) and expr.span == (0, 9)
    array = strip_optional(expr)
    assert isinstance(array, ArrayOf) and array.span == (0, 8)
    assert array.element.span == (0, 6)
    assert parse_type("(a|bb)[]").element.span == (0, 6)  # type: ignore[attr-defined]


def test_optional_flag() -> None:
    assert parse_type("integer?").optional
    assert not parse_type("integer").optional


INVALID = [
    # text, message fragment, span, replacement
    ("str", "did you mean 'string'", (0, 3), "string"),
    ("int", "did you mean 'integer'", (0, 3), "integer"),
    ("float", "did you mean 'number'", (0, 5), "number"),
    ("bool", "did you mean 'boolean'", (0, 4), "boolean"),
    ("list", "did you mean 'array'", (0, 4), "array"),
    ("dict", "did you mean 'object'", (0, 4), "object"),
    ("date", "no 'date' type; use string", (0, 4), "string"),
    ("str[]", "did you mean 'string'", (0, 3), "string"),
    ("string?[]", "array element cannot be optional; write string[]?", (0, 9), "string[]?"),
    ("T??", "single trailing ?", (1, 3), "?"),
    ("string[]??", "single trailing ?", (8, 10), "?"),
    ("(a|b)", "a plain enum is written a|b", (0, 5), "a|b"),
    ("a||b", "enum member is empty", (1, 2), None),
    ("|a", "enum member is empty", (0, 1), None),
    ("a|", "enum member is empty", (1, 2), None),
    ("(a||b)[]", "enum member is empty", (2, 3), None),
    ("List[str]", "write string[]", (0, 9), "string[]"),
    ("list[Review]", "write Review[]", (0, 12), "Review[]"),
    ("Optional[int]", "write integer?", (0, 13), "integer?"),
    ("string | integer", "unions of types are not supported", (0, 16), None),
    ("string|integer", "unions of types are not supported", (0, 14), None),
    ("string|null", "write string?", (0, 11), "string?"),
    ("review", "start with an uppercase letter", (0, 6), "Review"),
    ("child", "start with an uppercase letter", (0, 5), "Child"),
    (" string", "spaces around 'string'", (0, 7), "string"),
    ("low | high", "write low|high", (0, 10), "low|high"),
    ("", "empty type", (0, 0), None),
    ("?", "empty type", (0, 1), None),
    ("[]", "[] needs an element type", (0, 2), None),
    ("x[]|y", "unexpected '|'", (3, 4), None),
    ("{a: string}", "is not a type", (0, 11), None),
    ("null", "no 'null' type", (0, 4), None),
    ("string[", "unexpected '['", (6, 7), None),
]


@pytest.mark.parametrize(("text", "fragment", "span", "replacement"), INVALID)
def test_invalid_types_get_a_located_friendly_error(
    text: str, fragment: str, span: tuple[int, int], replacement: str | None
) -> None:
    with pytest.raises(ContractError) as info:
        parse_type(text)
    assert fragment in info.value.message
    assert info.value.span == span
    assert info.value.replacement == replacement


@pytest.mark.parametrize("text", [t for t, *_ in INVALID if _[2] is not None])
def test_replacements_are_valid_types(text: str) -> None:
    with pytest.raises(ContractError) as info:
        parse_type(text)
    start, end = info.value.span  # type: ignore[misc]
    fixed = text[:start] + info.value.replacement + text[end:]  # type: ignore[operator]
    parse_type(fixed)


@pytest.mark.parametrize(("value", "found"), [(3, "int"), ([1], "list"), ({"a": 1}, "dict"), (None, "NoneType")])
def test_non_string_is_a_contract_error(value: object, found: str) -> None:
    with pytest.raises(ContractError, match=f"found {found}"):
        parse_type(value)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab Sz|[]()?_-1")) | st.characters(), max_size=20))
def test_parse_type_only_raises_contract_errors_with_spans_inside(text: str) -> None:
    try:
        expr = parse_type(text)
    except ContractError as exc:
        assert exc.span is not None
        start, end = exc.span
        assert 0 <= start <= end <= len(text)
    else:
        assert parse_type(expr.describe()) == expr


def test_every_grammar_rule_is_a_node_the_builder_knows() -> None:
    grammar = resources.files("lockgate.dsl").joinpath("grammar/types.lark").read_text("utf-8")
    rules = set(re.findall(r"^([a-z]\w*):", grammar, flags=re.M)) - {"start"}
    assert rules == NODES


@pytest.mark.parametrize(("text", "fragment"), [
    ("string" + "[]" * 33, "arrays nest at most 32 deep"),
    ("a|" * 3000 + "b", "at most 4096 characters"),
], ids=["deep", "long"])
def test_limits(text: str, fragment: str) -> None:
    with pytest.raises(ContractError, match=fragment):
        parse_type(text)


def test_long_input_is_clipped_in_messages() -> None:
    with pytest.raises(ContractError) as info:
        parse_type("x" * 1000 + "[")
    assert len(info.value.message) < 250


def test_deepest_allowed_array_round_trips() -> None:
    text = "string" + "[]" * 32
    assert parse_type(text).describe() == text
