"""LG604 for ensure expressions that cannot type-check on the step's out contract, reported
only where the evaluator is certain to raise its type error."""

from __future__ import annotations

from checks_support import P, errors, flow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl.contracts import ContractSet
from lockgate.dsl.expr import BUILTINS, compile, parse
from lockgate.dsl.expr.typecheck import SIGNATURES, type_errors
from lockgate.errors import ContractError, ExprError

CONTRACTS = {
    "R": {"s": "string", "n": "number", "i": "integer", "b": "boolean", "e": "low|high",
          "tags": "string[]", "nums": "number[]", "meta": "Meta", "o": "number?", "anyo": "object",
          "arr": "array", "metas": "Meta[]"},
    "Meta": {"label": "string", "count": "integer", "note": "string?"},
}
YAML_CONTRACTS = ("R: {s: string, n: number, i: integer, b: boolean, e: 'low|high', tags: 'string[]', "
                  "nums: 'number[]', meta: Meta, o: 'number?', anyo: object, arr: array, metas: 'Meta[]'}\n"
                  "  Meta: {label: string, count: integer, note: 'string?'}")


def ensure(expr: str):
    """The findings of a spec whose step b (out R) has ``ensure: [{expr: ...}]``."""
    steps = f"""
        - {{id: a, do: x, out: R}}
        - {{id: b, do: y, out: R, after: [a], ensure: [{{expr: "{expr}"}}]}}
    """
    return errors(flow(steps, contracts=YAML_CONTRACTS))


def test_reviewer_ordering_a_number_against_a_string():
    (found,) = ensure("result.n >= 'high'")
    assert (found.code, found.path, found.span) == ("LG604", P(1, "ensure", 0, "expr"), (0, 18))
    assert found.message == ("result.n is a number; '>=' cannot compare it with the string 'high' "
                             "(in 'ensure')")


def test_the_right_side_of_a_logical_operator_is_never_reported():
    """It runs only for some values of the left, which folding cannot always settle (a review)."""
    for expr in ("len(result.tags) >= 0 || result.n > 'a'", "result.b || !result.b || result.n + 'x' == ''",
                 "result.b || result.n >= 'high'", "result.b && len(result.n) > 0"):
        assert ensure(expr) == [], expr


def test_reviewer_len_of_a_number():
    (found,) = ensure("len(result.n) > 0")
    assert (found.code, found.span) == ("LG604", (0, 13))
    assert found.message.startswith("result.n is a number; len() needs a string, array or object")


def test_span_is_the_offending_sub_expression():
    (found,) = ensure("(result.meta.count + 'x') == 'y' && len(result.tags) > 0")
    assert found.span == (1, 24)
    assert found.message == ("result.meta.count is a number; '+' cannot add it with the string 'x' "
                             "(in 'ensure')")


def test_function_argument_types_from_the_table():
    (found,) = ensure("matches(result.i, 'a+')")
    assert (found.code, found.span) == ("LG604", (0, 23))
    assert "matches() needs a string" in found.message
    (found,) = ensure("any(result.s)")
    assert "any() needs an array" in found.message


def test_nested_fields_and_array_elements_are_typed():
    assert [f.span for f in ensure("result.metas[0].label > 3")] == [(0, 25)]
    assert [f.span for f in ensure("-result.tags[0] < 0")] == [(0, 15)]


def test_correct_expressions_stay_clean():
    for expr in ("result.n >= 0.5", "len(result.s) > 0 && len(result.tags) > 0", "result.e == 'high'",
                 "result.n == 'high'", "result.s + 'x' == 'yx'", "result.s < 'm'", "result.i / 2 > result.n",
                 "'a' in result.tags", "'label' in result.meta", "len(result.meta) == 3", "all(result.nums)",
                 "max(result.nums) > 1", "max(result.tags) > 'a'", "int(result.s) > 1", "str(result.n) == '1'",
                 "!result.b || result.n > 0", "result.meta.note == null", "len(result.metas) > 0"):
        assert ensure(expr) == [], expr


def test_optional_and_untyped_values_are_never_reported():
    for expr in ("result.o >= 'x'", "len(result.o) > 0", "result.meta.note > 1", "result.anyo.x > 'a'",
                 "len(result.arr[0]) > 0", "input.topic > 1", "max(result.nums) > 'a'"):
        assert [f for f in ensure(expr) if f.code == "LG604"] == [], expr


def test_short_circuited_and_constant_parts_are_left_alone():
    assert ensure("false && result.n > 'a'") == []
    assert ensure("result.b && false && len(result.n) > 0") == []
    (found,) = ensure("result.b && len(3) > 0")  # reported once, by constant folding
    assert (found.code, found.span) == ("LG604", (12, 18))


def test_only_a_left_logical_operand_is_certain_to_be_tested():
    (found,) = ensure("result.n || result.b")
    assert (found.span, found.message) == ((0, 20), "result.n is a number; '||' needs booleans (in 'ensure')")
    assert ensure("result.b || result.n") == []  # fine whenever result.b is true


def test_fanout_stage_ensure_is_typed_by_the_stage_out_contract():
    steps = """
        - {id: a, do: x, out: R}
        - id: fan
          fanout:
            over: "${a.output.tags}"
            concurrency: 2
            isolation: none
            require: all
            merge: sequential
            steps:
              - {do: "first ${item}", out: Meta, ensure: [{expr: "result.count > 'x' && item == ''"}]}
    """
    (found,) = errors(flow(steps, contracts=YAML_CONTRACTS))
    assert (found.code, found.span) == ("LG604", (0, 18))
    assert found.message.startswith("result.count is a number; '>' cannot compare it with the string 'x'")


def test_when_is_typed_by_the_step_map_not_the_out_contract():
    """In a ``when``, ``result`` maps step ids to outputs (§5.4): ``result.a.n`` is step a's
    field n; ``result.n`` is a step n, which does not exist (LG606, not a type error)."""
    steps = """
        - {id: a, do: x, out: R}
        - {id: b, do: y, out: R, after: [a], when: "result.a.n > 'x' || result.n > 'x'"}
    """
    found = errors(flow(steps, contracts=YAML_CONTRACTS))
    assert [(f.code, f.span) for f in found] == [("LG604", (0, 16)), ("LG606", (26, 28))]


def test_the_signature_table_covers_every_builtin_with_its_arity():
    assert set(SIGNATURES) == set(BUILTINS)
    assert all(len(SIGNATURES[name][0]) == b.arity for name, b in BUILTINS.items())


# -- property: a report means the evaluator raises its type error ---------------------------

_TYPES = ContractSet.from_decls(CONTRACTS)


def _typer(name, path):
    if name != "result":
        return None
    try:
        return _TYPES.type_at("R", path)
    except ContractError:
        return None


_PATHS = ["result.s", "result.n", "result.i", "result.b", "result.e", "result.tags", "result.nums",
          "result.meta", "result.meta.label", "result.meta.count", "result.meta.note", "result.o",
          "result.anyo", "result.arr", "result.tags[0]", "result.nums[1]", "result.metas[0].count", "result"]
_LEAVES = st.sampled_from(_PATHS + ["'a'", "''", "1", "0", "2.5", "true", "false", "null"])
_CALLS = ["len", "any", "all", "max", "min", "str", "int", "bool"]


def _expressions(logical: bool):
    binary = ["+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "in"] + (["&&", "||"] if logical else [])

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(binary), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(st.sampled_from(["!", "-"]), inner).map(lambda t: f"{t[0]}{t[1]}"),
            st.tuples(st.sampled_from(_CALLS), inner).map(lambda t: f"{t[0]}({t[1]})"),
            inner.map(lambda e: f"matches({e}, 'a')"),
        )
    return st.recursive(_LEAVES, extend, max_leaves=6)


_TEXT = st.text(alphabet="ab1 ", max_size=4)
_NUMBER = st.one_of(st.integers(-3, 3), st.floats(-4, 4, allow_nan=False))
_META = st.fixed_dictionaries({"label": _TEXT, "count": st.integers(0, 3)},
                              optional={"note": st.one_of(st.none(), _TEXT)})
_VALUES = st.fixed_dictionaries(
    {"s": _TEXT, "n": _NUMBER, "i": st.integers(-3, 3), "b": st.booleans(), "e": st.sampled_from(["low", "high"]),
     "tags": st.lists(_TEXT, max_size=3), "nums": st.lists(_NUMBER, max_size=3), "meta": _META,
     "anyo": st.dictionaries(st.sampled_from(["x", "y"]), _NUMBER, max_size=2),
     "arr": st.lists(st.one_of(_NUMBER, _TEXT, st.booleans()), max_size=2), "metas": st.lists(_META, max_size=2)},
    optional={"o": st.one_of(st.none(), _NUMBER)})
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _raises_type_error(text: str, value: dict) -> bool:
    try:
        compile(text).evaluate({"result": value})
    except ExprError as error:
        return error.kind == "type"
    return False


def _reported(text: str, value: dict) -> list[ExprError]:
    assert _TYPES["R"].check(value) == []
    return type_errors(parse(text), text, _typer)


@SETTINGS
@given(_expressions(logical=False), _VALUES)
def test_a_report_means_the_whole_expression_raises_a_type_error(text, value):
    if _reported(text, value):
        assert _raises_type_error(text, value), text


@SETTINGS
@given(_expressions(logical=True), _VALUES)
def test_each_reported_sub_expression_raises_a_type_error_when_it_runs(text, value):
    """With ``&&``/``||`` too, a reported part always runs: the expression raises."""
    for error in _reported(text, value):
        assert _raises_type_error(text[error.span[0]: error.span[1]], value), (text, error)
        assert _raises_type_error(text, value), (text, error)
