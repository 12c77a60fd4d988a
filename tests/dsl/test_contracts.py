"""Contract sets (Stratum v1 §2): issues as findings, runtime validation, JSON Schema, typing."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl.codes import CODES
from lockgate.dsl.contractcheck import json_violations
from lockgate.dsl.contracts import ContractSet, PathError, UnknownContract
from lockgate.dsl.expr.jsonvalues import check_json
from lockgate.dsl.ir import build_spec
from lockgate.dsl.types import AnyArray, AnyObject, ArrayOf, Enum, Named, OptionalOf, Scalar, TypeExpr, Unknown
from lockgate.errors import ContractError, ExprError

CONTRACTS: dict[str, dict[str, Any]] = {
    "Review": {
        "verdict": "approve|revise",
        "items": "Item[]",
        "meta": "object?",
        "score": "integer?",
        "tags": "(a|b)[]",
        "notes": "string[]?",
    },
    "Item": {"name": "string", "n": "number", "sub": "Sub?", "raw": "array?"},
    "Sub": {"ok": "boolean", "grid": "integer[][]"},
    "Unused": {"x": "string"},
}
GOOD = ContractSet.from_decls(CONTRACTS)


def issues_of(contracts: dict[str, Any]) -> list[tuple[str, tuple[Any, ...], Any, str]]:
    spec = build_spec({"version": 1, "contracts": contracts, "flows": {}})
    return [(f.code, f.path, f.span, f.message) for f in ContractSet.from_decls(spec.contracts).issues]


def test_a_clean_set_has_no_issues() -> None:
    assert GOOD.issues == []
    assert set(GOOD) == set(CONTRACTS) and len(GOOD) == 4 and "Review" in GOOD


ISSUES = [
    # fields, code, path (under contracts.C), span, message fragment
    ({"a": "str"}, "LG301", ("a",), (0, 3), "did you mean 'string'"),
    ({"a": "string?[]"}, "LG301", ("a",), (0, 9), "write string[]?"),
    ({"a": "nubmer"}, "LG301", ("a",), (0, 6), 'unknown type "nubmer"; did you mean number?'),
    ({"a": "strng[]?"}, "LG301", ("a",), (0, 5), "did you mean string?"),
    ({"a": "okk"}, "LG301", ("a",), (0, 3), "did you mean Ok?"),
    ({"a": "zzz"}, "LG301", ("a",), (0, 3), "contract references start with an uppercase letter"),
    ({"a": "(x|y)"}, "LG301", ("a",), (0, 5), "plain enum"),
    ({"a": 3}, "LG301", ("a",), None, "found integer 3"),
    ({"a": "Missing"}, "LG302", ("a",), (0, 7), 'unknown contract "Missing"'),
    ({"a": "Missing[]?"}, "LG302", ("a",), (0, 7), 'unknown contract "Missing"'),
    ({"a": "Ok2"}, "LG302", ("a",), (0, 3), "did you mean Ok?"),
    ({"a": "String"}, "LG302", ("a",), (0, 6), "did you mean string?"),
    ({"constructor": "string"}, "LG206", ("constructor",), None, "reserved"),
    ({"__proto__": "string"}, "LG206", ("__proto__",), None, "reserved"),
    ({"prototype": "string"}, "LG206", ("prototype",), None, "reserved"),
    ({"1x": "string"}, "LG208", ("1x",), None, "invalid contract field name"),
    ({"a-b": "string"}, "LG208", ("a-b",), None, "invalid contract field name"),
    ({"me": "C"}, "LG303", ("me",), (0, 1), "recursive contract reference: C.me -> C"),
    ({"me": "C[]?"}, "LG303", ("me",), (0, 1), "C.me -> C"),
]


@pytest.mark.parametrize(("fields", "code", "path", "span", "fragment"), ISSUES)
def test_issues_are_findings_at_the_field(
    fields: dict[str, Any], code: str, path: tuple[str, ...], span: Any, fragment: str
) -> None:
    (issue,) = issues_of({"C": fields, "Ok": {"x": "string"}})
    assert issue[:3] == (code, ("contracts", "C", *path), span)
    assert fragment in issue[3]
    assert code in CODES


def test_field_name_problems_point_at_the_key() -> None:
    cs = ContractSet.from_decls({"C": {"constructor": "string", "b c": "string"}})
    assert [(f.code, f.at) for f in cs.issues] == [("LG206", "key"), ("LG208", "key")]


def test_a_lowercase_contract_is_never_a_type() -> None:
    (issue,) = issues_of({"child": {"x": "string"}, "P": {"c": "child[]"}})
    assert issue[0] == "LG301" and 'contract "child" cannot be used as a type' in issue[3]


def test_recursion_through_several_contracts_names_the_cycle() -> None:
    cs = ContractSet.from_decls({"Tree": {"kids": "Node[]"}, "Node": {"parent": "Tree?"}, "User": {"t": "Tree"}})
    (issue,) = cs.issues
    assert issue.code == "LG303" and issue.path == ("contracts", "Tree", "kids")
    assert issue.message == "recursive contract reference: Tree.kids -> Node.parent -> Tree"
    assert issue.related == ((("contracts", "Node", "parent"), "Node refers to Tree here"),)
    with pytest.raises(ContractError, match='"User" cannot be used'):
        cs["User"]


def test_every_problem_is_reported_and_from_decls_never_raises() -> None:
    weird: dict[Any, Any] = {"A": {"x": "str", "y": "Nope", 5: "string"}, "B": "not a mapping", "C": {"z": None}}
    codes = [f.code for f in ContractSet.from_decls(weird).issues]
    assert codes == ["LG301", "LG302", "LG208", "LG301"]


@pytest.mark.parametrize("decls", [None, [], "contracts", {"A": None}, {"A": ["x"]}])
def test_odd_shapes_give_an_empty_or_partial_set(decls: Any) -> None:
    cs = ContractSet.from_decls(decls)
    assert cs.issues == [] and all(cs.fields_of(n) == {} for n in cs)


def test_lookups() -> None:
    with pytest.raises(UnknownContract):
        GOOD["Nope"]
    with pytest.raises(KeyError):
        GOOD["Nope"]
    assert GOOD.get("Nope") is None
    assert GOOD["Review"] is GOOD["Review"]
    assert GOOD["Review"].describe()["tags"] == "(a|b)[]"


def test_check_fields_for_flow_inputs() -> None:
    findings = GOOD.check_fields({"topic": "string", "r": "Reveiw", "n": "int", "constructor": "string"},
                                 ("flows", "main", "input"))
    assert [(f.code, f.path, f.replacement) for f in findings] == [
        ("LG302", ("flows", "main", "input", "r"), "Review"),
        ("LG301", ("flows", "main", "input", "n"), "integer"),
        ("LG206", ("flows", "main", "input", "constructor"), None),
    ]


# -- runtime validation ------------------------------------------------------------------------------

VALID_REVIEW = {
    "verdict": "approve",
    "items": [{"name": "a", "n": 1.5, "sub": {"ok": True, "grid": [[1, 2], [3.0]]}, "raw": [1, "x"]}],
    "tags": ["a", "b"],
}


@pytest.mark.parametrize("value", [
    VALID_REVIEW,
    {**VALID_REVIEW, "meta": {"any": ["thing"]}, "score": 3, "notes": ["n"]},
    {**VALID_REVIEW, "meta": None, "score": None, "notes": None},
    {**VALID_REVIEW, "items": []},
    {**VALID_REVIEW, "score": 4.0},
])
def test_conforming_values_have_no_violations(value: dict[str, Any]) -> None:
    assert GOOD["Review"].check(value) == []


VIOLATIONS = [
    ({**VALID_REVIEW, "verdict": "maybe"}, "result.verdict", 'expected one of "approve", "revise", found string "maybe"'),
    ({**VALID_REVIEW, "score": 1.2}, "result.score", "expected integer, found number 1.2"),
    ({**VALID_REVIEW, "score": True}, "result.score", "expected integer, found boolean true"),
    ({**VALID_REVIEW, "tags": "a"}, "result.tags", 'expected (a|b)[], found string "a"'),
    ({**VALID_REVIEW, "tags": ["c"]}, "result.tags[0]", 'expected one of "a", "b", found string "c"'),
    ({**VALID_REVIEW, "meta": []}, "result.meta", "expected object, found array of 0 items"),
    ({**VALID_REVIEW, "extra": 1}, "result.extra", 'unknown field "extra"; Review allows:'),
    ({**VALID_REVIEW, "odd key": 1}, 'result["odd key"]', 'unknown field "odd key"'),
    ({k: v for k, v in VALID_REVIEW.items() if k != "tags"}, "result.tags", 'missing required field "tags" (expected (a|b)[])'),
    ({**VALID_REVIEW, "items": [{"name": None, "n": 1}]}, "result.items[0].name", "expected string, found null"),
    ({**VALID_REVIEW, "items": [{"name": "x", "n": 1, "sub": {"ok": 1, "grid": []}}]}, "result.items[0].sub.ok",
     "expected boolean, found integer 1"),
    ({**VALID_REVIEW, "items": [{"name": "x", "n": 1, "sub": {"ok": True, "grid": [[1, "2"]]}}]},
     "result.items[0].sub.grid[0][1]", 'expected integer, found string "2"'),
    ({**VALID_REVIEW, "items": [3]}, "result.items[0]", "expected Item object, found integer 3"),
    ({**VALID_REVIEW, "items": [{"name": "x", "n": 1, "nested": {}}]}, "result.items[0].nested", "Item allows: name, n, sub, raw"),
    ([1], "result", "expected Review object, found array of 1 item"),
]


@pytest.mark.parametrize(("value", "path", "fragment"), VIOLATIONS)
def test_violations_say_where_what_was_found_and_what_was_expected(value: Any, path: str, fragment: str) -> None:
    (violation,) = GOOD["Review"].check(value)
    assert violation.path == path
    assert fragment in violation.message
    assert str(violation).startswith(f"{path}: ")


def test_all_violations_are_collected_up_to_a_limit() -> None:
    value = {**VALID_REVIEW, "verdict": 1, "score": "x", "tags": ["z"] * 500}
    found = GOOD["Review"].check(value)
    assert len(found) == 100
    assert [v.path for v in found[:3]] == ["result.verdict", "result.score", "result.tags[0]"]
    assert len(GOOD["Review"].check(value, limit=5)) == 5


def test_root_names_the_checked_value() -> None:
    contract = GOOD.inline({"topic": "string", "review": "Review?"})
    assert contract.check({"topic": "t"}, root="input") == []
    assert [v.path for v in contract.check({"topic": 1, "more": 2}, root="input")] == ["input.topic", "input.more"]
    assert [v.path for v in contract.check({"topic": "t", "review": {}}, root="input")][:1] == ["input.review.verdict"]


def test_inline_rejects_invalid_fields() -> None:
    with pytest.raises(ContractError, match="did you mean 'string'"):
        GOOD.inline({"a": "str"})
    broken = ContractSet.from_decls({"A": {"x": "B"}, "B": {"y": "A"}})
    with pytest.raises(ContractError, match="cannot be used"):
        broken.inline({"a": "A"})


def test_non_finite_numbers_are_rejected() -> None:
    contract = GOOD.inline({"n": "number"})
    assert contract.check({"n": float("nan")}) and contract.check({"n": float("inf")})


# -- JSON Schema ------------------------------------------------------------------------------------


def test_json_schema_shape() -> None:
    schema = GOOD["Review"].json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == "Review" and schema["additionalProperties"] is False
    assert schema["required"] == ["verdict", "items", "tags"]
    assert schema["properties"]["score"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert schema["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/Item"}}
    assert sorted(schema["$defs"]) == ["Item", "Sub"]
    assert schema["$defs"]["Sub"]["properties"]["grid"] == {
        "type": "array", "items": {"type": "array", "items": {"type": "integer"}}
    }


def test_strict_json_schema_requires_every_field() -> None:
    schema = GOOD["Review"].json_schema(strict=True)
    assert "$schema" not in schema
    assert schema["required"] == list(CONTRACTS["Review"])
    assert schema["$defs"]["Item"]["required"] == list(CONTRACTS["Item"])
    assert jsonschema.Draft202012Validator(schema).is_valid({**VALID_REVIEW, "meta": None, "score": None, "notes": None})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["a", "b", "c", "approve", "revise", ""]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["name", "n", "sub", "raw", "ok", "grid", "x"]), inner, max_size=4),
    max_leaves=12,
)


def conforming(expr: TypeExpr) -> st.SearchStrategy[Any]:
    """Values that satisfy ``expr`` (in GOOD), generated from the type itself."""
    if isinstance(expr, OptionalOf):
        return st.none() | conforming(expr.inner)
    if isinstance(expr, Scalar):
        return {
            "string": st.text(max_size=3),
            "integer": st.integers(-3, 3) | st.integers(-3, 3).map(float),
            "number": st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False),
            "boolean": st.booleans(),
        }[expr.name]
    if isinstance(expr, AnyObject):
        return st.dictionaries(st.text(max_size=2), JSON, max_size=2)
    if isinstance(expr, AnyArray):
        return st.lists(JSON, max_size=2)
    if isinstance(expr, Enum):
        return st.sampled_from(expr.members)
    if isinstance(expr, ArrayOf):
        return st.lists(conforming(expr.element), max_size=3)
    assert isinstance(expr, Named)
    fields = GOOD.fields_of(expr)
    return st.fixed_dictionaries(
        {k: conforming(t) for k, t in fields.items() if not t.optional},
        optional={k: conforming(t) for k, t in fields.items() if t.optional},
    )


def mutate(data: st.DataObject, value: Any) -> Any:
    """Replace one randomly chosen part of ``value`` (maybe the whole) with arbitrary JSON,
    or add a key to an object on the way."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        extra = data.draw(st.dictionaries(st.sampled_from(["x", "name", "verdict"]), JSON, max_size=1))
        return {**value, key: mutate(data, value[key]), **extra}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], mutate(data, value[index]), *value[index + 1:]]
    return data.draw(JSON)


@pytest.mark.parametrize("root", ["Review", "Item", "Sub"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_check_agrees_with_jsonschema_on_the_generated_schema(root: str, data: st.DataObject) -> None:
    contract = GOOD[root]
    value = data.draw(conforming(Named(root)))
    assert contract.check(value) == []
    if data.draw(st.booleans()):
        value = mutate(data, value)
    validator = jsonschema.Draft202012Validator(contract.json_schema())
    assert (contract.check(value) == []) == validator.is_valid(value)


# -- hostile values: whatever a Python agent or an API caller hands over -----------------------------


class Text(str):
    """A str subclass: not a JSON string (nor a key) for expressions, so not for contracts."""


HUGE = 10**5000  # beyond the largest double, and too long for Python to print
HOSTILE_KEYS = st.sampled_from([None, 1.5, (1, 2), True, HUGE, Text("name"), Text("x")])
HOSTILE = (
    st.sampled_from([HUGE, -(10**400), float("nan"), float("-inf"), (1, 2), {1}, Text("a"), b"a", object()])
    | st.builds(OrderedDict, st.dictionaries(st.sampled_from(["name", "n"]), JSON, max_size=2))
    | st.builds(lambda key, item: {key: item}, HOSTILE_KEYS, JSON)
)


def plant(data: st.DataObject, value: Any) -> Any:
    """``value`` with one hostile part planted somewhere (maybe the whole, maybe deep inside an
    ``object`` or ``array`` field): a non-JSON value, or a key that is not a string."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        return {**value, key: plant(data, value[key])}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], plant(data, value[index]), *value[index + 1:]]
    if isinstance(value, dict) and data.draw(st.booleans()):
        return {**value, data.draw(HOSTILE_KEYS): data.draw(JSON)}
    return data.draw(HOSTILE)


def evaluator_refuses(value: Any) -> bool:
    try:
        check_json(value, "result")
    except ExprError:
        return True
    return False


@pytest.mark.parametrize("root", ["Review", "Item", "Sub"])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_check_refuses_what_expressions_refuse_and_never_raises(root: str, data: st.DataObject) -> None:
    """A value the contract accepts never fails later, in an ensure, for not being JSON; and a
    hostile value is violations with printable paths, never an exception."""
    value = plant(data, data.draw(conforming(Named(root))))
    found = GOOD[root].check(value)
    assert found or not evaluator_refuses(value)
    assert all(str(violation).startswith("result") for violation in found)


HOSTILE_VIOLATIONS = [
    ({**VALID_REVIEW, None: 1}, "result[None]", "a field name must be a string, found null; Review allows:"),
    ({**VALID_REVIEW, 1.5: 1}, "result[1.5]", "a field name must be a string, found number 1.5"),
    ({**VALID_REVIEW, (1, 2): 1}, "result[(1, 2)]", "found tuple (not a JSON type)"),
    ({**VALID_REVIEW, HUGE: 1}, "result[int]", "found integer of about 5001 digits"),
    ({**VALID_REVIEW, 7: 1}, "result[7]", 'unknown field "7"; Review allows:'),
    ({Text(k) if k == "tags" else k: v for k, v in VALID_REVIEW.items()}, "result['tags']",
     "found Text (not a JSON type)"),
    ({**VALID_REVIEW, "meta": {"k": {None: 1}}}, "result.meta.k[None]", "an object key must be a string, found null"),
    ({**VALID_REVIEW, "meta": {"k": [1, HUGE]}}, "result.meta.k[1]",
     "expected a number, found integer of about 5001 digits, beyond the largest number (about 1.8e308)"),
    ({**VALID_REVIEW, "meta": {"k": (1,)}}, "result.meta.k", "expected a JSON value, found tuple (not a JSON type)"),
    ({**VALID_REVIEW, "meta": {"k": float("nan")}}, "result.meta.k", "found number nan (not finite)"),
    ({**VALID_REVIEW, "meta": OrderedDict()}, "result.meta",
     "expected object, found OrderedDict (a dict subclass, not a plain JSON object)"),
    ({**VALID_REVIEW, "score": HUGE}, "result.score", "expected integer, found integer of about 5001 digits"),
    ({**VALID_REVIEW, "items": [{"name": "a", "n": -(10**400)}]}, "result.items[0].n",
     "expected number, found integer of about 401 digits"),
    ({**VALID_REVIEW, "verdict": HUGE}, "result.verdict", "found integer of about 5001 digits"),
    (OrderedDict(VALID_REVIEW), "result", "expected Review object, found OrderedDict (a dict subclass"),
]


@pytest.mark.parametrize(("value", "path", "fragment"), HOSTILE_VIOLATIONS)
def test_hostile_values_are_violations_with_readable_paths(value: Any, path: str, fragment: str) -> None:
    (violation,) = GOOD["Review"].check(value)
    assert (violation.path, fragment in violation.message) == (path, True), violation


def test_numbers_are_doubles_and_shared_or_cyclic_contents_are_checked_once() -> None:
    number = GOOD.inline({"n": "number", "i": "integer", "o": "object"})
    assert number.check({"n": 2**60, "i": 10**300, "o": {}}) == []  # rounded as doubles, as expressions do
    assert [v.path for v in number.check({"n": 2**1024, "i": 2**1024, "o": {}})] == ["result.n", "result.i"]
    shared: Any = [1]
    for _ in range(80):  # 2**80 paths, 80 lists
        shared = [shared, shared]
    assert number.check({"n": 1, "i": 1, "o": {"dag": shared}}) == []
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert number.check({"n": 1, "i": 1, "o": cyclic}) == []  # the store and expressions refuse it


def test_json_violations_names_the_first_part_that_is_not_json() -> None:
    assert json_violations({"a": [1, "x", None, 2.5]}) == []
    (found,) = json_violations({"a": [1, {"n": HUGE}]})
    assert str(found) == ("result.a[1].n: expected a number, found integer of about 5001 digits, "
                          "beyond the largest number (about 1.8e308)")
    assert [str(v) for v in json_violations(HUGE, "input")] == [
        "input: expected a number, found integer of about 5001 digits, beyond the largest number (about 1.8e308)"]


# -- typing ------------------------------------------------------------------------------------------

TYPE_AT = [
    ("Review", (), Named("Review")),
    ("Review", ("verdict",), Enum(("approve", "revise"))),
    ("Review", ("items",), ArrayOf(Named("Item"))),
    ("Review", ("items", 0), Named("Item")),
    ("Review", ("items", 0, "sub"), OptionalOf(Named("Sub"))),
    ("Review", ("items", 0, "sub", "grid", 1, 2), Scalar("integer")),
    ("Review", ("meta",), OptionalOf(AnyObject())),
    ("Review", ("meta", "anything", 0, "deeper"), Unknown()),
    ("Item", ("raw", 3, "x"), Unknown()),
    (ArrayOf(Named("Item")), (0, "name"), Scalar("string")),
]


@pytest.mark.parametrize(("root", "path", "expected"), TYPE_AT)
def test_type_at_follows_existing_paths(root: Any, path: tuple[Any, ...], expected: Any) -> None:
    assert GOOD.type_at(root, path) == expected


PATH_ERRORS = [
    ("Review", ("itemz",), 0, "itemz", 'unknown field "itemz" in Review; known fields: verdict, items,'),
    ("Review", ("items", "name"), 1, "name", "is an array: index it first, like [0]"),
    ("Review", ("verdict", "x"), 1, "x", "approve|revise has no fields"),
    ("Review", (0,), 0, 0, "Review is an object; read its fields with .name"),
    ("Review", ("meta", 0), 1, 0, "object values are read with .name"),
    ("Item", ("name", 0), 1, 0, "string has no fields or items"),
    (ArrayOf(Named("Item")), ("name",), 0, "name", "index it first"),
]


@pytest.mark.parametrize(("root", "path", "index", "segment", "fragment"), PATH_ERRORS)
def test_type_at_names_the_unknown_segment(root: Any, path: tuple[Any, ...], index: int, segment: Any, fragment: str) -> None:
    with pytest.raises(PathError) as info:
        GOOD.type_at(root, path)
    assert (info.value.index, info.value.segment) == (index, segment)
    assert fragment in info.value.message


def test_type_at_lists_known_fields_for_did_you_mean() -> None:
    with pytest.raises(PathError) as info:
        GOOD.type_at("Item", ("nmae",))
    assert info.value.known == ("name", "n", "sub", "raw")


def test_type_at_on_inline_input_fields() -> None:
    fields = {"topic": "string", "review": "Review?"}
    assert GOOD.type_at(fields, ("review", "items", 0, "n")) == Scalar("number")
    with pytest.raises(PathError, match='unknown field "topc" in input'):
        GOOD.type_at(fields, ("topc",))


def test_type_at_unknown_root_contract() -> None:
    with pytest.raises(ContractError, match='unknown contract "Nope"'):
        GOOD.type_at("Nope", ("x",))


def test_fields_of() -> None:
    assert list(GOOD.fields_of("Item")) == ["name", "n", "sub", "raw"]
    assert GOOD.fields_of(OptionalOf(Named("Sub")))["grid"] == ArrayOf(ArrayOf(Scalar("integer")))
    assert GOOD.fields_of(Scalar("string")) == {} and GOOD.fields_of("Nope") == {}
    assert GOOD.fields_of({"a": "int", "b": "string", "c": [1]}) == {"a": Unknown(), "b": Scalar("string"), "c": Unknown()}


# -- shipping ----------------------------------------------------------------------------------------


def test_closure_holds_only_reachable_contracts_sorted_by_name() -> None:
    closure = GOOD.closure("Review")
    assert list(closure) == ["Item", "Review", "Sub"]
    assert closure["Item"] == CONTRACTS["Item"]
    assert list(GOOD.closure("Sub")) == ["Sub"]


def test_digest_is_sha256_of_canonical_closure_json() -> None:
    canonical = json.dumps(GOOD.closure("Review"), sort_keys=True, separators=(",", ":"))
    assert GOOD.digest("Review") == hashlib.sha256(canonical.encode()).hexdigest()
    reordered = ContractSet.from_decls(dict(reversed(list(CONTRACTS.items()))))
    assert reordered.digest("Review") == GOOD.digest("Review")
    changed = ContractSet.from_decls({**CONTRACTS, "Sub": {"ok": "boolean", "grid": "integer[]"}})
    assert changed.digest("Review") != GOOD.digest("Review")
    assert changed.digest("Unused") == GOOD.digest("Unused")


def test_an_absurdly_deep_contract_chain_is_a_contract_error() -> None:
    decls: dict[str, Any] = {f"A{i}": {"x": f"A{i + 1}"} for i in range(3000)}
    decls["A3000"] = {"y": "string"}
    chain = ContractSet.from_decls(decls)
    assert chain.issues == [] and len(chain.closure("A0")) == 3001
    with pytest.raises(ContractError, match="too deeply"):
        chain["A0"]
    assert chain["A2998"].check({"x": {"x": {"y": "ok"}}}) == []
