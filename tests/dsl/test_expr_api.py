"""The public API: compile cache, predicate wrapper, bindings, introspection, static checks."""

from __future__ import annotations

import pytest

from lockgate.dsl.expr import (
    Bindings,
    Call,
    MemberPath,
    check,
    compile,
    evaluate,
    nodes,
    reason,
    walk,
)
from lockgate.dsl.values import UNDEFINED
from lockgate.errors import ExprError


def test_compile_is_cached_by_text() -> None:
    first = compile("result.a == 1")
    assert compile("result.a == 1") is first
    assert compile("result.a == 2") is not first


def test_evaluation_does_not_reparse(monkeypatch: pytest.MonkeyPatch) -> None:
    expr = compile("len(result.items) > 1")
    from lockgate.dsl.expr import parser

    def refuse(*args, **kwargs):
        raise AssertionError("re-parsed")

    monkeypatch.setattr(parser, "_parser", refuse)
    assert expr.evaluate({"result": {"items": [1, 2]}}) is True


@pytest.mark.parametrize(("source", "bindings", "outcome"), [
    ("result.ok", {"result": {"ok": True}}, (True, None)),
    ("result.ok", {"result": {"ok": False}}, (False, "predicate evaluated to false")),
    ("result.n", {"result": {"n": 1}},
     (False, "type_error: predicate must evaluate to boolean, received number")),
    ("result", {"result": None}, (False, "type_error: predicate must evaluate to boolean, received null")),
    ("result.tags", {"result": {"tags": []}},
     (False, "type_error: predicate must evaluate to boolean, received array")),
    ("result.missing", {"result": {}}, (False, "type_error: result has no member 'missing'")),
    ("1 / 0 == 1", {}, (False, "type_error: division by zero")),
    ("x == 1", {}, (False, ("unknown_identifier: unknown identifier 'x': expressions read only input, "
                            "item, prev, result (another step's output is result.<step> in when/set)"))),
    ("matches('a', '(a+)+')", {},
     (False, ("validation_error: regex contains a potentially unsafe construct "
              "(a quantified group containing a quantifier or an alternation)"))),
])
def test_holds(source: str, bindings: dict, outcome: tuple) -> None:
    assert compile(source).holds(bindings) == outcome


def test_reason_codes() -> None:
    assert reason(ExprError("parse", "x")) == "parse_error: x"
    assert reason(ExprError("resource_limit", "y")) == "resource_limit: y"


def test_bindings_are_validated_once_and_reusable() -> None:
    values = {"result": {"a": [1, 2]}, "input": {"x": 1}}
    bindings = Bindings(values)
    assert compile("len(result.a) == 2").evaluate(bindings) is True
    assert dict(bindings) == {"result": values["result"]}  # only what was read
    assert compile("input.x == 1").evaluate(bindings) is True
    assert set(bindings) == {"result", "input"}


def test_bindings_keep_the_workspace(tmp_path) -> None:
    (tmp_path / "f.txt").write_text("hello")
    bindings = Bindings({}, workspace=tmp_path)
    assert evaluate("file_contains('f.txt', 'ell')", bindings) is True
    other = tmp_path / "sub"
    other.mkdir()
    assert evaluate("file_exists('f.txt')", bindings, workspace=other) is False


def test_bindings_must_be_a_mapping() -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("true", [1, 2])  # type: ignore[arg-type]
    assert caught.value.kind == "type"


def test_unbound_identifier_is_unknown() -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("item.x", {"result": {}})
    assert caught.value.kind == "unknown_identifier" and caught.value.span == (0, 4)


def test_undefined_binding_in_holds() -> None:
    ok, why = compile("prev == null").holds({"prev": UNDEFINED})
    assert not ok and why.startswith("type_error: 'prev' is not a JSON value")


def test_identifiers_calls_and_member_paths() -> None:
    source = "len(result.a.b[0]) > 1 && input.x in item.tags || prev"
    expr = compile(source)
    assert expr.identifiers == {"result", "input", "item", "prev"}
    assert expr.calls == (Call("len", (0, 18), 1),)
    assert expr.member_paths == (
        MemberPath("result", ("a", "b", 0), (4, 17)),
        MemberPath("input", ("x",), (26, 33)),
        MemberPath("item", ("tags",), (37, 46)),
        MemberPath("prev", (), (50, 54)),
    )
    for path in expr.member_paths:
        assert source[slice(*path.span)].startswith(path.root)


def test_member_paths_through_parentheses() -> None:
    expr = compile("(result.a).b == 1")
    assert expr.member_paths == (MemberPath("result", ("a", "b"), (0, 12)),)


def test_nodes_walk_finds_file_predicates() -> None:
    expr = compile("file_exists('out/report.md') && file_contains('out/report.md', 'PASS')")
    calls = [node for node in expr.nodes() if isinstance(node, nodes.FunctionCall)]
    assert [c.name for c in calls] == ["file_exists", "file_contains"]
    assert calls[0].args[0].value == "out/report.md"
    assert sum(1 for _ in walk(expr.tree)) == expr.tree.size == 6


def test_static_errors_reports_all_problems_with_spans() -> None:
    source = "len(result.a, 1) > 0 && prev.x == True && max() == item"
    errors = compile(source).static_errors({"result", "input"})
    found = [(e.kind, source[slice(*e.span)]) for e in errors]
    assert found == [
        ("type", "len(result.a, 1)"),
        ("unknown_identifier", "prev"),
        ("unknown_identifier", "True"),
        ("type", "max()"),
        ("unknown_identifier", "item"),
    ]
    assert "write true" in errors[2].message
    assert "can read input, result" in errors[1].message


def test_check_reports_unknown_functions_too() -> None:
    errors = check("size(result) > 0 && lenght(input.a) && item", {"result", "input"})
    assert [(e.kind, e.span) for e in errors] == [
        ("unknown_function", (0, 4)), ("unknown_function", (20, 26)), ("unknown_identifier", (39, 43))]
    assert check("a ==", {"result"})[0].kind == "parse"
    assert check("result.x == 1", {"result"}) == []


def test_results_are_json_values() -> None:
    assert evaluate("result", {"result": {"a": [1]}}) == {"a": [1]}
    assert type(evaluate("6 / 3", {})) is int
    assert evaluate("str(result)", {"result": {"b": 1, "a": "é"}}) == '{"b":1,"a":"é"}'
