"""``matches``: the size limits, the safety filter and JS ``u``-mode semantics (reference §5.6)."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl.expr import compile, evaluate
from lockgate.dsl.expr.regex_safety import (
    SEARCH_TIMEOUT_SECONDS,
    UNSAFE,
    _scanned,
    chain_form,
    check_safety,
    compile_pattern,
    search,
    search_form,
    translate,
)
from lockgate.errors import ExprError

ACCEPTED = ["a*ba+", "(foo|bar)baz", "^(ab)+$", ".*error.*", "^[A-Z]", "x{2}", "x{2,}y",
            "\\{literal\\}", "a+?b", "[{}]", "(a)(b)", "a|b*", "\\d+", "[a-z]", "()*",
            "a\\(b", "x" * 200]
REJECTED = [
    "(a)\\1", "a\\9",  # backreferences
    "(?=a)", "(?<n>a)", "(?:a)", "(?i)a",  # any (?
    "a{", "{", "a{1,2", "a{x}", "x{,3}", "*a", "+", "a|*", "(*)", "a**", "a???",  # nothing to repeat / braces
    "(a+)+", "(a|aa)+", "(a|b)+", "((a|b))+", "(a(b+))*",  # quantified groups
    "a*a*", "[ab]+a?", "(ab)*(ab)*", ".*.*", "a{0,99}a*", "a+?a+", "^[a-z]+[0-9]+$",
    "a*(b*)", "(a*)b*", "(ab)*c?",  # adjacent quantified atoms, groups transparent
    "[abc", "(a", "a)", "((a)",  # unterminated class, unbalanced parentheses
    "ca?" * 33,  # 33 quantifiers
]


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_filter_accepts(pattern: str) -> None:
    check_safety(pattern)


@pytest.mark.parametrize("pattern", REJECTED)
def test_filter_rejects(pattern: str) -> None:
    with pytest.raises(ExprError) as caught:
        check_safety(pattern)
    assert caught.value.kind == "validation"
    assert caught.value.message.startswith(UNSAFE)


def test_thirty_two_quantifiers_are_allowed() -> None:
    check_safety("ca?" * 32)


@pytest.mark.parametrize(("subject", "pattern", "expected"), [
    ("abc", "b", True),  # search, not full match
    ("abc", "^b", False),
    ("a\n", "a$", False),  # JS $ is the very end, not before a final newline
    ("a\nb", "a.b", False),  # . stops at line terminators
    ("a\u2028b", "a.b", False),
    ("a😀b", "^a.b$", True),  # u mode: one code point
    ("٣", "\\d", False),  # ASCII digits only
    ("é", "\\w", False),
    ("a\u00a0b", "a\\sb", True),  # JS \s is Unicode whitespace
    ("a\u00a0b", "a\\Sb", False),
    ("x-y", "[\\s-]", True),
    ("\x08", "[\\b]", True),  # backspace in a class
    ("😀", "\\u{1F600}", True),
    ("😀", "\\uD83D\\uDE00", True),
    ("A", "\\x41", True),
    ("\x01", "\\cA", True),
    ("anything", "[^]", True),
    ("anything", "[]", False),
    ("a]", "[\\]]", True),
    ("^", "[\\^]", True),
    ("a-b", "a[-]b", True),
    ("&&", "[&]", True),
    ("ab", "(a)(b)", True),
    ("a/b", "a/b", True),
    ("a{b", "a\\{b", True),
    ("2024", "^[0-9]{4}$", True),  # brace quantifiers (they were refused as a lone '}')
    ("123", "^[0-9]{4}$", False),
    ("xx", "x{2}", True),
    ("abab", "^(ab){2}$", True),
    ("aaa", "^a{2,}$", True),
    ("a", "^a{2,}$", False),
    ("ab", "^a{0,99}b$", True),
    ("1234", "^\\d{2,3}$", False),
])
def test_javascript_semantics(subject: str, pattern: str, expected: bool) -> None:
    assert evaluate("matches(input.s, input.p)", {"input": {"s": subject, "p": pattern}}) is expected
    assert evaluate(f"matches(input.s, {_literal(pattern)})", {"input": {"s": subject}}) is expected


def _literal(text: str) -> str:
    """An expression string literal for ``text``, every non-alphanumeric unit as \\uXXXX."""
    units = text.encode("utf-16-be", "surrogatepass")
    codes = [int.from_bytes(units[i:i + 2], "big") for i in range(0, len(units), 2)]
    return '"' + "".join(chr(c) if chr(c).isascii() and chr(c).isalnum() else f"\\u{c:04x}"
                         for c in codes) + '"'


@pytest.mark.parametrize("pattern", ["\\p{L}", "\\P{Lu}", "[\\S]", "\\a", "\\z", "\\Z", "a}", "]",
                                     "[\\d-z]", "[z-a]", "\\u{110000}", "\\k", "\\01", "a{3,2}",
                                     "\\"])
def test_invalid_or_untranslatable_patterns(pattern: str) -> None:
    with pytest.raises(ExprError) as caught:
        evaluate("matches('x', input.p)", {"input": {"p": pattern}})
    assert caught.value.kind == "validation"


def test_translation_examples() -> None:
    assert translate("^a.b$") == "^a[^\\n\\r\\u2028\\u2029]b\\Z"
    assert translate("[]") == "(?!)"


def test_limits_come_before_the_filter() -> None:
    long_unsafe = "(a+)+" + "x" * 252  # 257 chars and unsafe: the length wins
    with pytest.raises(ExprError) as caught:
        evaluate("matches('a', input.p)", {"input": {"p": long_unsafe}})
    assert caught.value.kind == "resource_limit"
    evaluate("matches('a', input.p)", {"input": {"p": "a" * 256}})
    with pytest.raises(ExprError) as caught:  # input length is checked before the filter
        evaluate("matches(input.s, '(a+)+')", {"input": {"s": "a" * 4097}})
    assert caught.value.kind == "resource_limit"
    assert evaluate("matches(input.s, 'a$')", {"input": {"s": "a" * 4096}}) is True
    with pytest.raises(ExprError) as caught:  # lengths are UTF-16 units: 2049 emoji are 4098
        evaluate("matches(input.s, 'a')", {"input": {"s": "😀" * 2049}})
    assert caught.value.kind == "resource_limit"
    assert evaluate("matches(input.s, 'a')", {"input": {"s": "😀" * 2048}}) is False


def test_literal_pattern_errors_surface_at_evaluation_and_statically() -> None:
    expr = compile("input.ok || matches(input.s, 'a*a*')")
    assert expr.evaluate({"input": {"ok": True, "s": "a"}}) is True  # never reached
    with pytest.raises(ExprError) as caught:
        expr.evaluate({"input": {"ok": False, "s": "a"}})
    assert caught.value.kind == "validation"
    [error] = expr.static_errors({"input"})
    assert error.kind == "validation" and expr.source[slice(*error.span)] == "'a*a*'"


def test_polynomial_patterns_finish() -> None:
    """Accepted by the filter yet polynomial under backtracking: bounded by the input limit."""
    result = evaluate("matches(input.s, '.*a.*a.*a.*b')", {"input": {"s": "a" * 300}})
    assert result is False


@pytest.mark.parametrize(("pattern", "reduced"), [
    (".*x.*y", "x.*y"), (".*?x", "x"), ("[^x]*x.*y", "x.*y"), ("\\s*foo", "foo"), ("a+b", "ab"),
    ("a{3,}b", "a{3}b"), ("a{0,5}b", "b"), ("\\d{2,3}$", "\\d{2}$"), (".*", ""),
    ("a*|b", None), ("^.*x", None), ("(a|b)c*", None), ("(ab)*c", None), ("x.*y", None), ("a{2}b", None),
])
def test_a_leading_quantifier_is_cut_to_its_minimum_for_the_search(pattern, reduced) -> None:
    form = search_form(pattern, _scanned(pattern))
    assert (form and form[0]) == reduced


@pytest.mark.parametrize("pattern", [".*x.*y", ".*?x.*y", "[^z]*x.*y", ".*error.*fatal"])
@pytest.mark.parametrize("subject", ["x" * 4096, "xa" * 2048, "y" * 2048 + "x" * 2048, "error " * 682])
def test_leading_dot_star_searches_finish_well_within_the_time_limit(pattern, subject) -> None:
    """These ran into the 1 s search limit (cubic backtracking) before the leading cut."""
    started = time.perf_counter()
    assert evaluate("matches(input.s, input.p)", {"input": {"s": subject, "p": pattern}}) is False
    assert evaluate(f"matches(input.s, '{pattern}')", {"input": {"s": subject}}) is False
    assert time.perf_counter() - started < SEARCH_TIMEOUT_SECONDS


@pytest.mark.parametrize(("subject", "pattern", "expected"), [
    ("ab", ".*b", True), ("a\nb", ".*a.b", False), ("aab", "a{2,}b", True), ("ab", "a{2,}b", False),
    ("1234", "\\d{2,3}$", True), ("12a", "\\d{2,3}$", False), ("", ".*", True), ("x", "[]*x", True),
    ("b", "[]+b", False), ("\n", "[^]*\\n", True), ("xay", ".*?x.*?y", True), ("ya", "a*|b", True),
])
def test_the_cut_keeps_what_a_search_finds(subject, pattern, expected) -> None:
    assert evaluate("matches(input.s, input.p)", {"input": {"s": subject, "p": pattern}}) is expected


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([".", "a", "[ab]", "\\s", "[^a]", "\\d"]),
       st.sampled_from(["*", "+", "?", "*?", "{2,}", "{0,3}", "{1,2}", "{2}"]),
       st.sampled_from(["", "a", "b$", "\\bb", "a.b", "(a|b)", "^a", "\\n", "b|a"]),
       st.text(alphabet="ab1 \n", max_size=8))
def test_the_cut_agrees_with_the_uncut_pattern(atom, quantifier, rest, subject) -> None:
    pattern = atom + quantifier + rest
    try:
        scanner = _scanned(pattern)
    except ExprError:
        return  # the filter refuses it: nothing is searched
    python = re.compile(translate(pattern), re.ASCII)
    assert bool(python.search(subject)) is search(compile_pattern(pattern), subject)
    assert search_form(pattern, scanner) is None or rest != "b|a"  # a top-level alternation


@pytest.mark.parametrize(("pattern", "chained"), [
    (".*x.*y.*z", True), ("x.*y.*z", True), ("^.*x.*y", True), (".*error.*disk.*full.*", True),
    ("a\\..*b.*c\\*d", True), ("x.*?y.*?z", True),
    ("x.*y$", False), ("x.+y.*z", False), ("\\.*x.*y", False), ("a*.*b.*c", False), (".*", False),
    ("x.*(y|z).*w", False), ("x.*[yz].*w", False),
])
def test_literal_chains_take_the_earliest_next_literal(pattern, chained) -> None:
    assert (chain_form(pattern) is not None) is chained


@pytest.mark.parametrize(("pattern", "subject"), [
    (".*x.*y.*z", "xy" * 2048), (".*x.*y.*z", "x" * 4096), ("x.*y.*z.*w", "xyz" * 1365),
    ("^.*x.*y.*z", "xy" * 2048), (".*ab.*cd.*ef", "abcd" * 1024),
])
def test_chains_of_three_literals_finish_well_within_the_time_limit(pattern, subject) -> None:
    """Cubic backtracking with two '.*' left after the cut: past the limit before the chain form."""
    started = time.perf_counter()
    assert evaluate("matches(input.s, input.p)", {"input": {"s": subject, "p": pattern}}) is False
    assert time.perf_counter() - started < SEARCH_TIMEOUT_SECONDS


@settings(max_examples=400, deadline=None)
@given(st.booleans(), st.booleans(), st.lists(st.sampled_from(["x", "y", "xy", "\\.", "é"]), min_size=2, max_size=4),
       st.lists(st.sampled_from([".*", ".*?"]), min_size=4, max_size=4), st.booleans(),
       st.text(alphabet="xyé.\n\u2028", max_size=10))
def test_the_chain_form_finds_what_the_pattern_finds(anchored, leading, literals, gaps, trailing, subject) -> None:
    pattern = ("^" if anchored else "") + (".*" if leading else "") + "".join(
        (gap if i else "") + literal for i, (gap, literal) in enumerate(zip(gaps, literals)))
    pattern += ".*" if trailing else ""
    chain = chain_form(pattern)
    assert chain is not None
    expected = re.compile(translate(pattern), re.ASCII).search(subject) is not None
    assert (re.compile(chain, re.ASCII).search(subject) is not None) is expected
    assert search(compile_pattern(pattern), subject) is expected
