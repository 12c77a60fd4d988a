"""A value written after YAML node properties has the range of its own text, for every legal
shape of them: an anchor, a tag (shorthand ``!!str``, verbatim ``!<tag:yaml.org,2002:str>``,
non-specific ``!``) or both in either order, with blanks, comments and line breaks between them
and the value. The properties are read by the YAML scanner, not a pattern: the pattern of 1dbd37f
stopped at a comment (``out: &o # note`` newline ``Outt``: the quick fix deleted the comment) and
at the comma of a verbatim tag (the fix deleted the anchor, and every ``*o`` then failed with
LG103). Review s13a #3."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lockgate.dsl.loader import load

INDENT = " " * 10  # deeper than the step's keys: a value continued on the next line

SPEC = """version: 1
contracts:
  Out: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${second.output}", contract: Out}
    steps:
      - id: build
        do: "x"
        out: %s
      - id: second
        do: "y"
        out: %s
"""

FLOW_SPEC = """version: 1
contracts:
  Out: {v: string}
flows:
  entry: main
  main:
    input: {}
    output: {from: "${second.output}", contract: Out}
    steps:
      - {id: build, do: "x", out: %s}
      - id: second
        do: "y"
        out: %s
"""


def _offset(text: str, pos) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[:pos.line]) + pos.character


def _apply(text: str, edits) -> str:
    for edit in sorted(edits, key=lambda e: _offset(text, e.range.start), reverse=True):
        text = text[:_offset(text, edit.range.start)] + edit.new_text + text[_offset(text, edit.range.end):]
    return text


def _fixed_contract(spec: str, props: str, value: str, alias: bool) -> None:
    """``out: <props><value>`` names the contract Outt: the diagnostic covers ``value`` alone,
    and its fix keeps every character of the properties (anchor, tag, comments)."""
    text = spec % (props + value, "*o" if alias else "Out")
    start = text.index(props + value) + len(props)
    found = [d for d in load(text).diagnostics if d.code == "LG302" and d.path[3] == 0]
    assert len(found) == 1, load(text).diagnostics
    diag = found[0]
    assert (_offset(text, diag.range.start), _offset(text, diag.range.end)) == (start, start + len(value))
    fixed = _apply(text, diag.fix.edits)
    assert fixed == text[:start] + "Out" + text[start + len(value):]
    assert [d for d in load(fixed).diagnostics if d.is_error] == []


def test_a_comment_between_an_anchor_and_its_value_survives_the_fix() -> None:
    _fixed_contract(SPEC, f"&o # keep this comment\n{INDENT}", "Outt", alias=True)


def test_a_verbatim_tag_with_a_comma_before_an_anchor_survives_the_fix() -> None:
    _fixed_contract(SPEC, "!<tag:yaml.org,2002:str> &o ", "Outt", alias=True)


def test_an_anchor_before_a_verbatim_tag_survives_the_fix() -> None:
    _fixed_contract(SPEC, "&o !<tag:yaml.org,2002:str> ", "Outt", alias=True)


_SEPARATORS = st.sampled_from([" ", "  ", "\t", f"\n{INDENT}", f" # a note\n{INDENT}",
                               f"  #, [not] {{yaml}} &x !y\n{INDENT}", f" # one\n{INDENT}# two\n{INDENT}"])
_TAGS = st.sampled_from(["!!str", "!<tag:yaml.org,2002:str>", "!"])


@settings(max_examples=150, deadline=None)
@given(anchored=st.booleans(), tag=st.none() | _TAGS, anchor_first=st.booleans(), between=_SEPARATORS,
       before_value=_SEPARATORS, value=st.sampled_from(["Outt", "'Outt'", '"Outt"']),
       spec=st.sampled_from([SPEC, FLOW_SPEC]))
def test_every_shape_of_properties_leaves_the_value_its_own_range(anchored, tag, anchor_first, between,
                                                                  before_value, value, spec) -> None:
    props = [p for p in ("&o" if anchored else None, tag) if p is not None]
    if not props:
        props = ["&o"]
        anchored = True
    if not anchor_first:
        props.reverse()
    _fixed_contract(spec, between.join(props) + before_value, value, alias=anchored)


def _covered(text: str, diag) -> str:
    return text[_offset(text, diag.range.start):_offset(text, diag.range.end)]


def test_a_collection_tag_is_flagged_over_its_properties_alone() -> None:
    text = ("version: 1\nflows: !<tag:yaml.org,2002:omap> &f # a note\n  - a: 1\n"
            "contracts: &c !!set # another\n  A: {v: string}\n")
    tagged = [_covered(text, d) for d in load(text).diagnostics if d.code == "LG109"]
    assert tagged == ["!<tag:yaml.org,2002:omap> &f", "&c !!set"]


def test_an_empty_value_after_properties_is_placed_right_after_them() -> None:
    text = ("version: 1\ncontracts: {}\nflows:\n  entry: main\n  main:\n    input: {}\n"
            "    output: {from: \"${build.output}\"}\n    steps:\n      - id: build\n"
            "        do: &d # nothing yet\n        out: Out\n")
    [diag] = [d for d in load(text).diagnostics if d.code == "LG201"]
    after = text.index("&d") + 2
    assert (_offset(text, diag.range.start), _offset(text, diag.range.end)) == (after, after)
