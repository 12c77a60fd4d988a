"""Grammar, spans, friendly parse errors and the size/depth limits (reference §5.1-5.3)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from lockgate.dsl.expr import compile, evaluate, parse
from lockgate.dsl.expr import nodes as n
from lockgate.errors import ExprError

GRAMMAR = Path(__file__).parents[2] / "lockgate" / "dsl" / "grammar" / "expr.lark"


def parse_error(source: str) -> ExprError:
    with pytest.raises(ExprError) as caught:
        parse(source)
    assert caught.value.kind == "parse", caught.value
    return caught.value


def test_every_grammar_alias_has_a_builder_method() -> None:
    from lockgate.dsl.expr.parser import _Builder

    aliases = set(re.findall(r"->\s*(\w+)", GRAMMAR.read_text()))
    assert aliases == {"binary", "unary", "member", "index", "number", "string", "true", "false",
                       "null", "identifier", "call", "group"}
    assert all(callable(getattr(_Builder, alias, None)) for alias in aliases | {"arguments"})


def test_precedence_and_left_associativity() -> None:
    tree = parse("a || b && c == d + e * -f")
    assert isinstance(tree, n.Binary) and tree.op == "||"
    assert tree.right.op == "&&" and tree.right.right.op == "=="
    add = tree.right.right.right
    assert add.op == "+" and add.right.op == "*" and isinstance(add.right.right, n.Unary)
    chained = parse("1 - 2 - 3")
    assert chained.left.op == "-" and chained.right.value == 3


@pytest.mark.parametrize(("source", "sub", "text"), [
    ("result.a.b[0] == input.x", "left", "result.a.b[0]"),
    ("result.a.b[0] == input.x", "right", "input.x"),
    ("len(result.items) > 0", "left", "len(result.items)"),
    ("!(a)", "operand", "(a)"),
    ("  'x' in y ", "left", "'x'"),
])
def test_spans_cover_the_source_text(source: str, sub: str, text: str) -> None:
    tree = parse(source)
    node = getattr(tree, sub)
    assert source[node.span[0]:node.span[1]] == text


def test_member_and_name_spans() -> None:
    source = "result.items[12].name"
    tree = parse(source)
    assert isinstance(tree, n.Member) and source[slice(*tree.name_span)] == "name"
    assert isinstance(tree.target, n.Index) and source[slice(*tree.target.index_span)] == "12"
    call = parse("  matches(a, 'x')")
    assert call.span == (2, 17) and call.name_span == (2, 9)


@pytest.mark.parametrize(("source", "value"), [
    ("0", 0), ("10", 10), ("1.25", 1.25), ("1e3", 1000), ("1E+2", 100), ("5e-1", 0.5),
    ("'a\\tb'", "a\tb"), ('"\\u0041"', "A"), ("'\\\\'", "\\"), ("'\\b\\f\\r'", "\b\f\r"),
])
def test_literals(source: str, value: object) -> None:
    tree = parse(source)
    assert isinstance(tree, n.Literal) and tree.value == value


@pytest.mark.parametrize("source", ["a\u00a0&&\u2028b", "a\t&&\nb", "\ufeffa"])
def test_whitespace_is_javascript_whitespace(source: str) -> None:
    parse(source)


def test_words_that_are_not_keywords() -> None:
    assert isinstance(parse("True"), n.Identifier)
    assert isinstance(parse("inx"), n.Identifier)
    assert parse("x.true").name == "true"
    assert parse("x.null").name == "null"


# The friendly-message table: a common slip, the words the message must contain, the text the
# span must cover.
FRIENDLY = [
    ("result.a = 1", "compare with '=='", "="),
    ("a and b", "use '&&' instead of 'and'", "and"),
    ("a or b", "use '||' instead of 'or'", "or"),
    ("not a", "use '!' instead of 'not'", "not"),
    ("a & b", "use '&&'", "&"),
    ("a | b", "use '||'", "|"),
    ('"abc', "unterminated string", '"abc'),
    ("'abc", "unterminated string", "'abc"),
    ('"a\\qb"', "invalid escape '\\q'", "\\q"),
    ('"a\\x41"', "invalid escape '\\x'", "\\x"),
    ('"\\u12"', "exactly 4 hex digits", '\\u12"'),
    ('"a\nb"', "raw control character (U+000A)", "\n"),
    ("result.title.lower()", "methods cannot be called", ".lower("),
    ("x.toString()", "methods cannot be called", ".toString("),
    ("result.items[i]", "non-negative integer literal", "i"),
    ("result.items[-1]", "non-negative integer literal", "-"),
    ("result.obj['k']", "read object members with .name", "'k'"),
    ("result.items[1.5]", "non-negative integer literal", "1.5"),
    ("result.n % 2", "no '%' operator", "%"),
    ("a ? b : c", "no conditional operator", "?"),
    ("${result.x} == 1", "expressions read values directly", "${result.x}"),
    ("${input.x}", "result.<step>", "${input.x}"),
    ("1 +", "an operand is missing", "+"),
    ("a &&", "an operand is missing", "&&"),
    ("a.", "an operand is missing", "."),
    ("(1 + 2", "'(' is never closed", "("),
    ("len(a", "'(' is never closed", "("),
    ("a[0", "'[' is never closed", "["),
    ("1 + 2)", "')' has no matching", ")"),
    ("a]", "']' has no matching", "]"),
    ("", "the expression is empty", ""),
    ("   ", "the expression is empty", "   "),
    ("01", "leading zeros", "01"),
    (".5", "write 0.5", ".5"),
    ("5.", "cannot end with '.'", "5."),
    ("1e400", "out of range", "1e400"),
    ("a b", "missing operator between 'a' and 'b'", "a b"),
    ("* 3", "needs a value on its left", "*"),
    ("a == == b", "needs a value on its left", "=="),
    ("max([1, 2])", "no array literals", "["),
    ("{a: 1}", "no object literals", "{"),
    ("a.in", "'in' is an operator", "in"),
    ("a.0", "for an array element write [0]", "0"),
    ("x.__proto__", "'__proto__' is not allowed", "__proto__"),
    ("x.constructor.name", "'constructor' is not allowed", "constructor"),
    ("x.a.prototype", "'prototype' is not allowed", "prototype"),
    ("a; b", "';' is not allowed", ";"),
    ("a \\ b", "backslash", "\\"),
    ("a # b", "unexpected character '#'", "#"),
]


@pytest.mark.parametrize(("source", "words", "covered"), FRIENDLY)
def test_friendly_messages(source: str, words: str, covered: str) -> None:
    error = parse_error(source)
    assert words in error.message
    assert error.span is not None
    assert source[error.span[0]:error.span[1]] == covered


# Operator slips carry their fix as data: the text to write in place of the span.
OPERATOR_SLIPS = [
    ("result.a = 1", "=", "=="),
    ("a and b", "and", "&&"),
    ("a or b", "or", "||"),
    ("not a", "not", "!"),
    ("a is b", "is", "=="),
    ("a is not null", "is not", "!="),
    ("a => 1", "=>", ">="),
    ("a =< 1", "=<", "<="),
    ("a === 1", "===", "=="),
    ("a !== 1", "!==", "!="),
    ("not in_stock", "not", "!"),  # a name, not the word 'in'
]


@pytest.mark.parametrize(("source", "bad", "good"), OPERATOR_SLIPS)
def test_an_operator_slip_carries_its_replacement(source: str, bad: str, good: str) -> None:
    error = parse_error(source)
    assert error.span is not None and source[slice(*error.span)] == bad
    assert error.replacement == good


# an applied fix must give a valid expression: where none does, there is none
@pytest.mark.parametrize("source", ["a & b", "result.title.lower()", "a b", "(1 + 2", "x.__proto__",
                                    "x not in y", "a =! b", "a <=> b", "a ==== 1", "x >= = 1"])
def test_other_parse_errors_carry_no_replacement(source: str) -> None:
    assert parse_error(source).replacement is None


@pytest.mark.parametrize("name", ["True", "False", "None"])
def test_python_literals_are_explained_as_unknown_identifiers(name: str) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate(f"result.ok == {name}", {"result": {"ok": True}})
    assert caught.value.kind == "unknown_identifier"
    assert f"write {name.lower() if name != 'None' else 'null'}" in caught.value.message


def test_unknown_function_is_a_compile_error_with_a_suggestion() -> None:
    with pytest.raises(ExprError) as caught:
        compile("lenght(result.items) > 0")
    assert caught.value.kind == "unknown_function"
    assert caught.value.span == (0, 6)
    assert "did you mean 'len'" in caught.value.message
    with pytest.raises(ExprError) as caught:
        compile("contains(result.tags, 'x')")
    assert "use 'x in y'" in caught.value.message


def test_non_string_source_is_a_parse_error() -> None:
    with pytest.raises(ExprError) as caught:
        compile(42)  # type: ignore[arg-type]
    assert caught.value.kind == "parse"


# -- limits -----------------------------------------------------------------------------------


def limit_error(source: str) -> ExprError:
    with pytest.raises(ExprError) as caught:
        compile(source)
    assert caught.value.kind == "resource_limit", caught.value
    return caught.value


def test_node_limit_boundary() -> None:
    assert evaluate("+".join(["1"] * 2048), {}) == 2048  # 4095 nodes
    limit_error("+".join(["1"] * 2049))  # 4097 nodes


def test_node_limit_counts_members_calls_and_unary() -> None:
    chain = "x" + ".a" * 4095  # 4096 nodes
    assert parse(chain).size == 4096
    limit_error(chain + ".a")
    assert parse("len(-x[0])").size == 4


@pytest.mark.parametrize("wrap", [lambda e: f"({e})", lambda e: f"!{e}", lambda e: f"-{e}",
                                  lambda e: f"len({e})"])
def test_depth_limit_boundary(wrap) -> None:
    source = "1"
    for _ in range(128):
        source = wrap(source)
    assert parse(source).depth == 128
    compile(source)
    limit_error(wrap(source))


def test_depth_limit_mixes_parentheses_unary_and_arguments() -> None:
    source = "true"
    for i in range(128):
        source = ["({})", "!{}", "bool({})"][i % 3].format(source)
    compile(source)
    limit_error(f"!{source}")


def test_deep_but_legal_expression_evaluates() -> None:
    source = "1"
    for _ in range(128):
        source = f"(1 + 2 * {source} - 1 / 1 == 3 || false && true)"
    assert parse(source).depth == 128
    with pytest.raises(ExprError) as caught:  # the innermost group is false; 2 * false fails
        evaluate(source, {})
    assert caught.value.message == "'*' needs two numbers, received number and boolean"
    assert source[slice(*caught.value.span)].startswith("2 * (1 + 2 * 1 - 1 / 1 == 3")
    logic = "true"
    for _ in range(64):
        logic = f"(true && (false || {logic} == true))"
    assert evaluate(logic, {}) is True


@pytest.mark.parametrize("source", [
    "(" * 10_000 + "1" + ")" * 10_000,
    "!" * 1_000_000 + "true",
    "-" * 1_000_000 + "1",
    "1+" * 500_000 + "1",
    "x" + ".a" * 500_000,
    "len(" * 300_000,
])
def test_huge_inputs_fail_fast(source: str) -> None:
    started = time.perf_counter()
    limit_error(source)
    assert time.perf_counter() - started < 2.0


def test_long_source_without_many_nodes_is_fine() -> None:
    text = "x" * 1_000_000
    assert evaluate(f"len('{text}') + 0", {}) == 1_000_000
    assert evaluate(" " * 1_000_000 + "true", {}) is True


def test_every_lark_input_error_is_translated() -> None:
    from lark import Token
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    from lockgate.dsl.expr.messages import explain

    errors = [
        UnexpectedEOF(expected=["NAME"]),
        UnexpectedCharacters("a @", 2, 1, 3),
        UnexpectedToken(Token("NAME", "b", start_pos=2, end_pos=3), {"$END"}),
    ]
    for error in errors:
        translated = explain("a @", error, [], [])
        assert isinstance(translated, ExprError) and translated.kind == "parse"


@pytest.mark.parametrize(("source", "bad", "good"), OPERATOR_SLIPS)
def test_an_applied_operator_fix_parses(source: str, bad: str, good: str) -> None:
    span = parse_error(source).span
    assert span is not None
    parse(source[:span[0]] + good + source[span[1]:])


def test_a_slip_keeps_its_fix_when_another_slip_follows() -> None:
    error = parse_error("a = 1 && b = 2")
    assert (error.span, error.replacement) == ((2, 3), "==")
