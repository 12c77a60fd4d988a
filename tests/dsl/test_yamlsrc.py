"""parse_yaml and SourceMap: data, diagnostics and exact positions.

Expected ranges are found by searching the source text for the characters a range must cover,
so every golden range below says "these exact characters of the document".
"""

from __future__ import annotations

import pytest

from lockgate.dsl.diagnostics import Position, Range
from lockgate.dsl.yamlsrc import LineIndex, parse_yaml


def at(text: str, needle: str, occurrence: int = 0) -> Range:
    """The range of the ``occurrence``-th ``needle`` in ``text``."""
    idx = -1
    for _ in range(occurrence + 1):
        idx = text.index(needle, idx + 1)
    lines = LineIndex(text)
    return lines.range(idx, idx + len(needle))


def codes(text: str | bytes) -> list[str]:
    return [d.code for d in parse_yaml(text).diagnostics]


# -- data ---------------------------------------------------------------------------------------


def test_data_matches_safe_load_for_core_types() -> None:
    text = "a: 1\nb: 2.5\nc: true\nd: null\ne: ~\nf: 'x'\ng: [1, two]\nh: {k: v}\ni: 0x1F\nj: .inf\nk: yes\n"
    data = parse_yaml(text).data
    assert data == {"a": 1, "b": 2.5, "c": True, "d": None, "e": None, "f": "x", "g": [1, "two"],
                    "h": {"k": "v"}, "i": 31, "j": float("inf"), "k": True}


def test_timestamps_stay_strings() -> None:
    assert parse_yaml("when: 2024-01-31\n").data == {"when": "2024-01-31"}


def test_json_document() -> None:
    text = '{\n\t"version": 1,\n\t"flows": {"entry": "main", "main": {"steps": [{"id": "a", "do": "x"}]}}\n}\n'
    parsed = parse_yaml(text)
    assert parsed.diagnostics == []
    assert parsed.data["flows"]["main"]["steps"][0] == {"id": "a", "do": "x"}
    assert parsed.source_map.value_range(("flows", "main", "steps", 0, "do")) == at(text, '"x"')


def test_aliases_share_values_and_merge_keys_merge() -> None:
    text = "base: &b {agent: claude, attempts: 3}\nstep:\n  <<: *b\n  attempts: 1\n"
    parsed = parse_yaml(text)
    assert parsed.data["step"] == {"agent": "claude", "attempts": 1}
    # a merged key points at its definition in the anchor
    assert parsed.source_map.value_range(("step", "agent")) == at(text, "claude")


def test_bom_is_skipped_and_positions_still_count_it() -> None:
    text = "\ufeffversion: 1\nname: x\n"
    parsed = parse_yaml(text)
    assert parsed.data == {"version": 1, "name": "x"}
    assert parsed.source_map.value_range(("version",)) == at(text, "1")
    assert parsed.source_map.key_range(("name",)) == at(text, "name")


def test_bytes_input_is_decoded() -> None:
    parsed = parse_yaml("do: café\n".encode())
    assert parsed.data == {"do": "café"}
    assert parsed.text == "do: café\n"


# -- diagnostics --------------------------------------------------------------------------------


def test_duplicate_key_points_at_second_and_relates_first() -> None:
    text = "a: 1\nb: 2\na: 3\n"
    parsed = parse_yaml(text)
    (diag,) = parsed.diagnostics
    assert diag.code == "LG104" and diag.name == "YAML_DUPLICATE_KEY"
    assert diag.range == at(text, "a", 1)
    assert diag.related[0].range == at(text, "a", 0)
    assert parsed.data == {"a": 3, "b": 2}


def test_second_document_keeps_the_first() -> None:
    text = "a: 1\n---\nb: 2\n"
    parsed = parse_yaml(text)
    assert codes(text) == ["LG105"]
    assert parsed.diagnostics[0].range == at(text, "---")
    assert parsed.data == {"a": 1}


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "---\n", "--- \n...\n"])
def test_empty_documents(text: str) -> None:
    parsed = parse_yaml(text)
    assert codes(text) == ["LG108"]
    assert parsed.data is None


@pytest.mark.parametrize(
    ("text", "needle", "words"),
    [
        ("a:\n\tb: 1\n", "\t", "tab"),
        ("do: Summarise: the text\n", ":", "colon"),
        ("do: 'unclosed\nnext: 1\n", "'", "never closed"),
        ('do: "unclosed\n', '"', "never closed"),
        ("agent: @me\n", "@", "cannot start"),
        ('do: "C:\\path"\n', "\\p", "escape"),
        ("a:\n  b: 1\n c: 2\n", "c", "indentation"),
        ("after: [a, b\n", "[", "not closed"),
        ("a: *nothing\n", "*nothing", "unknown alias"),
        # a string left open runs on to the next quote of its kind: reported where it opens
        ('a:\n  do: "hello\n  b: "x"\n', '"', "not closed on its line"),
        ('a:\n  do: "Summarise\n  b: 1\n  c: Don\'t "panic" now\n', '"', "runs on to line 4"),
        # a quote in a block scalar's text or in a comment opens no string
        ("a:\n  do: |\n    Reviewer: 'be strict\n  b: it's: bad\n", ":", "colon"),
        ("a:\n  # reviewer: 'strict\n  b: it's: bad\n", ":", "colon"),
    ],
)
def test_syntax_errors_are_explained_at_the_problem(text: str, needle: str, words: str) -> None:
    (diag,) = parse_yaml(text).diagnostics
    assert diag.code == "LG103"
    index = text.rindex(needle) if needle == ":" else text.index(needle)
    assert diag.range.start == LineIndex(text).position(index)
    assert words in diag.message


def test_tags_and_non_string_keys() -> None:
    text = "a: !custom x\non: 1\n? [k]\n: v\nb: !!int '7'\n"
    parsed = parse_yaml(text)
    assert [d.code for d in parsed.diagnostics] == ["LG109", "LG109", "LG109"]
    assert parsed.diagnostics[0].range == at(text, "!custom x")
    assert parsed.diagnostics[1].range == at(text, "on")
    assert parsed.data == {"a": "x", "b": 7}


def test_not_utf8_points_at_the_byte() -> None:
    raw = b"a: ok\nb: caf\xe9\n"
    (diag,) = parse_yaml(raw).diagnostics
    assert diag.code == "LG102"
    assert diag.range.start == Position(1, 6)


# -- source map ---------------------------------------------------------------------------------

SPEC = """version: 1
flows:
  entry: main
  main:
    steps:
      - id: draft
        do: "Write about ${input.topic}"
        agent: claude
      - id: review
        gate: {on_approve: null, on_revise: draft, on_kill: null}
"""


def test_value_and_key_ranges() -> None:
    sm = parse_yaml(SPEC).source_map
    assert sm.value_range(("flows", "main", "steps", 0, "agent")) == at(SPEC, "claude")
    assert sm.key_range(("flows", "main", "steps", 0, "agent")) == at(SPEC, "agent")
    assert sm.value_range(("flows", "main", "steps", 1, "gate", "on_revise")) == at(SPEC, "draft", 1)
    assert sm.value_range(("flows", "main", "steps", 1, "gate")) == at(
        SPEC, "{on_approve: null, on_revise: draft, on_kill: null}")
    # a sequence item's key is its first key
    assert sm.key_range(("flows", "main", "steps", 1)) == at(SPEC, "id", 1)


def test_missing_paths_fall_back_to_the_nearest_ancestor() -> None:
    sm = parse_yaml(SPEC).source_map
    missing = ("flows", "main", "steps", 1, "gate", "max_rounds")
    assert not sm.exists(missing)
    assert sm.key_range(missing) == at(SPEC, "gate")
    assert sm.key_range(("flows", "main", "output", "from")) == at(SPEC, "main", 1)
    assert sm.value_range(("flows", "main", "steps", 7)) == sm.value_range(("flows", "main", "steps"))


def test_path_at_finds_keys_values_and_gaps() -> None:
    sm = parse_yaml(SPEC).source_map
    lines = LineIndex(SPEC)
    agent_key = SPEC.index("agent")
    assert sm.path_at(lines.position(agent_key + 2)) == (("flows", "main", "steps", 0, "agent"), "key")
    ref = SPEC.index("${input.topic}")
    assert sm.path_at(lines.position(ref + 3)) == (("flows", "main", "steps", 0, "do"), "value")
    on_revise = SPEC.index("draft", SPEC.index("on_revise"))
    assert sm.path_at(lines.position(on_revise)) == (("flows", "main", "steps", 1, "gate", "on_revise"), "value")
    assert sm.path_at(Position(0, 2)) == (("version",), "key")


def test_path_at_on_an_empty_value_and_between_entries() -> None:
    text = "step:\n  id: a\n  agent: \n\n  out: X\n"
    sm = parse_yaml(text).source_map
    assert sm.path_at(Position(2, 9)) == (("step", "agent"), "value")
    assert sm.path_at(Position(3, 0)) == (("step",), "value")


def test_paths_iterates_in_document_order() -> None:
    sm = parse_yaml("a: {b: 1, c: [x, y]}\nd: 2\n").source_map
    assert list(sm.paths()) == [(), ("a",), ("a", "b"), ("a", "c"), ("a", "c", 0), ("a", "c", 1), ("d",)]


def test_no_source_map_root_for_unreadable_documents() -> None:
    parsed = parse_yaml("a: [\n")
    assert parsed.data is None
    assert parsed.source_map.path_at(Position(0, 0)) is None
    assert parsed.source_map.value_range(("a",)) == Range.of(0, 0, 0, 0)
