"""A scalar written after a YAML anchor or tag (``out: &o Outt``, ``id: !!str build``) has the
range of its own text, not of its properties too: a diagnostic's range, and so the fix that
replaces it, used to cover the anchor (the fix turned ``&o Outt`` into ``Out``, and any ``*o``
no longer resolved). Found by the language-server review of session 12 (F2's root cause)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl.loader import load

SPEC = """version: 1
contracts:
  Out: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${build.output}", contract: Out}
    steps:
      - id: build
        do: "x"
        out: %s
"""


def _text_of(text: str, rng) -> str:
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:rng.start.line]) + rng.start.character
    end = sum(len(line) for line in lines[:rng.end.line]) + rng.end.character
    return text[start:end]


def test_a_misspelled_contract_after_an_anchor_is_flagged_and_fixed_alone() -> None:
    text = SPEC % "&o Outt"
    [diag] = [d for d in load(text).diagnostics if d.code == "LG302"]
    assert _text_of(text, diag.range) == "Outt"


@settings(max_examples=60, deadline=None)
@given(anchor=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
       tag=st.sampled_from(["", "!!str ", "!local "]), anchor_first=st.booleans(),
       blanks=st.sampled_from([" ", "  ", "\t"]))
def test_the_range_of_a_scalar_after_its_properties_is_its_own_text(anchor, tag, anchor_first, blanks) -> None:
    props = f"&{anchor}{blanks}{tag}" if anchor_first else f"{tag}&{anchor}{blanks}"
    text = SPEC % f"{props}Outt"
    found = [d for d in load(text).diagnostics if d.code == "LG302"]
    if tag == "!local ":  # an unknown tag is refused (LG109) before the contract is looked up
        return
    [diag] = found
    assert _text_of(text, diag.range) == "Outt"


def test_a_tag_on_a_collection_or_a_scalar_is_flagged_over_the_tag() -> None:
    text = "version: 1\nflows: !!omap\n  - a: 1\ncontracts: {A: {v: !!set x}}\n"
    tagged = [_text_of(text, d.range) for d in load(text).diagnostics if d.code == "LG109"]
    assert tagged[0].startswith("!!omap") and "!!set x" in tagged
