"""Warm loads equal cold ones: the chunked parse (yamlsrc) and the memoised checks give exactly
what a whole parse and a fresh check run give, whatever one edit did to the document."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.dsl import yamlchunks, yamlsrc
from lockgate.dsl.diagnostics import Position
from lockgate.dsl.loader import clear_caches, load

HEAD = """\
version: 1
contracts:
  Result:
    summary: string
    score: number
    tags: string[]
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${s5.output}"
      contract: Result
    max_rounds: 2
    steps:
"""
STEP = """\
      - id: s{i}
        do: "Work on ${{input.topic}} after ${{s{p}.output.summary}}"
        agent: claude
        out: Result
        ensure:
          - expr: "len(result.summary) > {i} && result.score >= 0.5"
"""
GATE = """\
      # a gate
      - id: s{i}
        after: [s{p}]
        gate:
          on_approve: null
          on_revise: s{p}
          on_kill: null
"""
TAIL = """\
  other:
    input:
      x: string
    output:
      from: "${b.output}"
      contract: Result
    steps:
      - id: a
        do: |
          Use ${input.x}
          carefully
        out: Result
      - id: b
        do: 'Then ${a.output.summary}'
        out: Result
"""


def document(steps: int = 6) -> str:
    body = [STEP.format(i=0, p=0).replace(" after ${s0.output.summary}", "")]
    body += [(GATE if i == 4 else STEP).format(i=i, p=i - 1 if i != 5 else 3) for i in range(1, steps)]
    return HEAD + "".join(body) + TAIL


BASE = document()
PIECES = st.sampled_from([
    " ", "\n", "x", "-", "- ", ":", ": ", "#", "'", '"', "&a ", "*a", "|", ">", "[", "]", "{", "}", ",",
    "\n      - id: q\n        do: 'x'\n", "\n    steps:\n", "steps:", "\n  ", "\n        ", "${s1.output.summary}",
    "\t", "---\n", "é", "result.", "0.9",
])


@st.composite
def edits(draw):
    text = BASE
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        end = min(len(text), start + draw(st.integers(0, 12)))
        text = text[:start] + draw(PIECES) + text[end:]
    return text


@pytest.fixture(autouse=True)
def chunk_small_documents(monkeypatch):
    monkeypatch.setattr(yamlchunks, "CHUNKED_MIN_ITEMS", 2)
    monkeypatch.setattr(yamlchunks, "CHUNKED_MIN_CHARS", 0)


def assert_same_map(a, b, text: str) -> None:
    paths = list(a.paths())
    assert paths == list(b.paths())
    for path in paths:
        assert a.value_range(path) == b.value_range(path), path
        assert a.key_range(path) == b.key_range(path), path
        assert a.span_range(path, 1, 3) == b.span_range(path, 1, 3), path
    for line in range(text.count("\n") + 2):
        for character in (0, 2, 6, 8, 9, 14, 40):
            pos = Position(line, character)
            assert a.path_at(pos) == b.path_at(pos), pos
            found = a.path_at(pos)
            if found is not None:
                assert a.offset_in_value(found[0], pos) == b.offset_in_value(found[0], pos), pos


def test_the_base_document_is_parsed_in_chunks_and_valid():
    assert yamlsrc._parse_in_chunks(BASE) is not None
    assert load(BASE).ok


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits())
def test_a_chunked_parse_equals_a_whole_parse(text):
    yamlsrc._parse_in_chunks(BASE)  # warm the chunk cache with the unedited document
    chunked = yamlsrc._parse_in_chunks(text)
    if chunked is None:
        return  # not clearly splittable: parse_yaml parses it whole
    whole = yamlsrc._Composer(text).run()
    assert whole.diagnostics == [] and chunked.diagnostics == []
    assert chunked.data == whole.data
    assert_same_map(chunked.source_map, whole.source_map, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits())
def test_a_warm_load_equals_a_cold_load(text):
    load(BASE)
    warm = load(text)
    clear_caches()
    cold = load(text)
    assert warm.diagnostics == cold.diagnostics
    assert warm.ir == cold.ir


def test_fallbacks_keep_the_whole_parse():
    assert yamlsrc._parse_in_chunks(BASE.replace("      - id: s2\n", "      - &x id: s2\n")) is None  # anchors
    assert yamlsrc._parse_in_chunks(BASE.replace("\n", "\r\n")) is None  # CRLF
    duplicate = BASE.replace("        agent: claude\n", "        agent: claude\n        agent: codex\n", 1)
    assert yamlsrc._parse_in_chunks(duplicate) is None  # a diagnostic in a chunk
    assert load(duplicate).diagnostics[0].code == "LG104"
