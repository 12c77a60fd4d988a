"""A ``set`` step's keys against its ``out`` contract (review s10, F6 #1): contracts are strict,
so a key the contract lacks or a required field no key gives fails the assembled output every
time, and set steps never retry. LG304, at the key or at ``set``; optional fields may be left
out."""

from __future__ import annotations

from lockgate.dsl import Range, load
from lockgate.dsl.codes import lookup


def spec(contract: str, keys: str) -> str:
    return f"""\
version: 1
contracts:
  Summary: {contract}
flows:
  entry: main
  main:
    input: {{}}
    output: {{from: "${{sum.output}}", contract: Summary}}
    steps:
      - id: sum
        set:
{keys}        out: Summary
"""


def lg304(contract: str, keys: str):
    return [d for d in load(spec(contract, keys)).diagnostics if d.code == "LG304"]


def test_a_key_the_contract_lacks_is_an_error_at_the_key():
    (diag,) = lg304("{title: string}", "          title: \"'report'\"\n          count: \"2\"\n")
    assert diag.range == Range.of(12, 10, 12, 15)
    assert diag.is_error and lookup("LG304").name == "SET_OUT_MISMATCH"
    assert diag.message == ("'count' is not a field of out contract Summary: the set output always "
                            "fails the contract, and set steps never retry")
    assert diag.hint == "Summary has title: string"
    assert diag.fix is None


def test_a_missing_required_field_is_an_error_at_set():
    (diag,) = lg304("{title: string, count: integer, n: number}", "          title: \"'report'\"\n")
    assert diag.range == Range.of(10, 8, 10, 11)
    assert diag.message == ("'set' gives no value for required fields 'count', 'n' of out contract "
                            "Summary: the set output always fails the contract, and set steps never retry")


def test_a_misspelt_key_is_one_problem_with_a_fix():
    (diag,) = lg304("{title: string, count: integer}", "          title: \"'report'\"\n          cuont: \"2\"\n")
    assert diag.range == Range.of(12, 10, 12, 15)
    assert "did you mean 'count'?" in diag.message
    assert diag.fix.edits[0].new_text == "count" and diag.fix.edits[0].range == diag.range


def test_optional_fields_may_be_left_out():
    assert lg304("{title: string, count: 'integer?', tags: 'string[]?'}", "          title: \"'report'\"\n") == []


def test_keys_matching_the_contract_are_clean():
    text = spec("{title: string, count: integer}", "          title: \"'report'\"\n          count: \"2\"\n")
    assert load(text).ok


def test_an_undeclared_out_contract_is_left_to_lg302():
    text = spec("{title: string}", "          title: \"'report'\"\n").replace("out: Summary", "out: Sumary")
    assert [d.code for d in load(text).diagnostics if d.is_error] == ["LG302"]


def test_a_misspelt_optional_field_is_guessed_with_its_required_neighbour_given():
    """review s10 F8 #3: every field the set does not give is a candidate, optional ones too."""
    (diag,) = lg304("{title: string, count: 'number?'}", "          title: \"'report'\"\n          cuont: \"3\"\n")
    assert "did you mean 'count'?" in diag.message
    assert diag.fix.edits[0].new_text == "count"


def test_a_misspelt_optional_field_is_not_renamed_to_an_unrelated_missing_one():
    """review s10 F8 #3: ``cuont`` for the optional ``count`` is not taken for the missing
    ``title`` (the fix wrote title: 3, an LG604), and ``title`` is still reported missing."""
    found = lg304("{title: string, count: 'number?'}", "          cuont: \"3\"\n")
    assert [d.message for d in found] == [
        ("'set' gives no value for required field 'title' of out contract Summary: the set output "
         "always fails the contract, and set steps never retry"),
        ("'cuont' is not a field of out contract Summary; did you mean 'count'?: the set output "
         "always fails the contract, and set steps never retry"),
    ]
    fixed = spec("{title: string, count: 'number?'}", "          cuont: \"3\"\n          title: \"'x'\"\n")
    assert load(fixed.replace("cuont", found[1].fix.edits[0].new_text)).ok


def test_an_unrelated_key_in_place_of_a_missing_field_has_no_guess():
    """review s10 F8 #3: one extra key and one missing field are no rename unless the names are
    alike."""
    found = lg304("{title: string}", "          colour: \"'red'\"\n")
    assert [d.fix for d in found] == [None, None]
    assert "'title'" in found[0].message and "did you mean" not in found[1].message
