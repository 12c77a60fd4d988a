"""Hostile input: whatever the bytes, parse_yaml (and load) answer with diagnostics, never an
exception or a hang. Outcomes are asserted, not timings; the inputs are sized so that a parser
that did not bound its work would take minutes or exhaust memory."""

from __future__ import annotations

import os
import random
import tracemalloc
from pathlib import Path

import pytest

from lockgate.dsl.loader import load, load_file
from lockgate.dsl.yamlsrc import MAX_DEPTH, MAX_DOCUMENT_CHARS, MAX_NODES, parse_yaml


def only(text: str | bytes) -> str:
    parsed = parse_yaml(text)
    assert parsed.data is None
    assert len(parsed.diagnostics) == 1, parsed.diagnostics
    return parsed.diagnostics[0].code


def test_binary() -> None:
    rng = random.Random(7)
    blob = bytes(rng.randrange(256) for _ in range(4096))
    assert only(blob) == "LG102"
    assert only(b"\x89PNG\r\n\x1a\n" + bytes(100)) == "LG102"


def test_not_utf8() -> None:
    assert only("version: 1\ndo: café\n".encode("latin-1")) == "LG102"
    assert only("a: \ud800\n") == "LG102"  # a lone surrogate in a str


def test_nul_in_text() -> None:
    assert only("version: 1\x00\n") == "LG102"


def test_fifty_megabytes_is_refused_before_parsing() -> None:
    big = "a" * (50 * 1024 * 1024)
    assert only(big) == "LG101"
    assert only(big.encode()) == "LG101"


def _load_file_peak(path: str | Path) -> tuple[list[str], int]:
    """The diagnostics' messages of ``load_file(path)`` and the memory it peaked at, in bytes."""
    tracemalloc.start()
    try:
        result = load_file(path)
        return [d.message for d in result.diagnostics], tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_file_is_refused_without_reading_it(tmp_path) -> None:
    path = tmp_path / "sparse.stratum.yaml"
    with open(path, "wb") as handle:  # 1.5 GB on disk in no blocks
        os.truncate(handle.fileno(), 1_500 * 1024 * 1024)
    messages, peak = _load_file_peak(path)
    assert messages == ["the document is 1,572,864,000 bytes; specs are limited to 10 MB"]
    assert peak < 1024 * 1024


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_file_is_read_no_further_than_the_limit() -> None:
    messages, peak = _load_file_peak("/dev/zero")
    assert messages == [f"the document is {MAX_DOCUMENT_CHARS + 1:,} bytes or more; specs are limited to 10 MB"]
    assert peak < 3 * MAX_DOCUMENT_CHARS


def test_a_file_at_the_limit_is_read_whole(tmp_path) -> None:
    path = tmp_path / "full.stratum.yaml"
    path.write_bytes(b"#" * (MAX_DOCUMENT_CHARS - 1) + b"\n")
    assert all(d.code != "LG101" for d in load_file(path).diagnostics)


def test_ten_thousand_deep_nesting() -> None:
    for text in ("[" * 10_000 + "]" * 10_000, "{a: " * 10_000 + "}" * 10_000,
                 "".join(" " * i + "- \n" for i in range(0, 4_000, 2))):
        assert only(text) in {"LG107", "LG103"}
    assert only("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)) == "LG107"


def test_nesting_within_the_limit_is_fine() -> None:
    depth = MAX_DEPTH - 1
    assert parse_yaml("[" * depth + "]" * depth).diagnostics == []


def test_billion_laughs() -> None:
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    assert only("\n".join(lines) + "\n") == "LG106"


def test_many_aliases() -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * 5000) + "]\n"
    assert only(text) == "LG106"


def test_recursive_alias() -> None:
    assert only("a: &a [*a]\n") == "LG106"


def test_tabs() -> None:
    assert only("version: 1\nflows:\n\tentry: main\n") == "LG103"


def test_json_document() -> None:
    result = load('{"version": 1, "contracts": {}, "flows": {"entry": "m"}}')
    assert all(d.code != "LG103" for d in result.diagnostics)


def test_empty_and_lone_separator() -> None:
    assert only("") == "LG108"
    assert only(b"") == "LG108"
    assert only("---\n") == "LG108"
    assert only("...\n") == "LG103"  # a document end with no document is a YAML error


def test_multiple_documents() -> None:
    parsed = parse_yaml("version: 1\n---\nversion: 1\n---\nversion: 1\n")
    assert [d.code for d in parsed.diagnostics] == ["LG105"]


def test_one_megabyte_single_line() -> None:
    line = "do: " + "x" * (1024 * 1024)
    parsed = parse_yaml(line)
    assert parsed.diagnostics == [] and len(parsed.data["do"]) == 1024 * 1024
    assert only("[" + "1, " * 100_000 + "\n") == "LG103"  # unclosed
    assert only("[" + "1, " * 350_000 + "]\n") == "LG101"  # a megabyte of values: too many


def test_value_count_is_bounded() -> None:
    assert only("- x\n" * (MAX_NODES + 1)) == "LG101"


def test_long_key() -> None:
    parsed = parse_yaml("k" * 5000 + ": 1\n")
    assert parsed.data is None or parsed.diagnostics == []


@pytest.mark.parametrize("seed", range(40))
def test_random_mutations_of_a_spec_never_raise(seed: int) -> None:
    rng = random.Random(seed)
    base = bytearray(open(os.path.join(os.path.dirname(__file__), "corpus", "invalid",
                                       "205-agent-on-gate.stratum.yaml"), "rb").read())
    for _ in range(rng.randint(1, 12)):
        pos = rng.randrange(len(base))
        op = rng.random()
        if op < 0.4:
            base[pos] = rng.choice(b" \t\n:-[]{}'\"&*!|>#%@`\\,?x\xff")
        elif op < 0.7:
            del base[pos]
        else:
            base[pos:pos] = bytes(rng.choice([b"  ", b"- ", b": ", b"\n", b"&a ", b"*a", b"!!str "]))
    result = load(bytes(base))
    assert isinstance(result.diagnostics, list)
    for d in result.diagnostics:
        assert d.range.start <= d.range.end


def test_a_number_too_long_to_read_is_a_diagnostic_at_it() -> None:
    text = "version: 1\nflows: {}\nnote: " + "9" * 5000 + "\n"
    diagnostics = parse_yaml(text).diagnostics
    (long,) = [d for d in diagnostics if d.code == "LG109"]
    assert long.message == "`99999999999999999999...` (5,000 digits) is too long to read as a number"
    assert (long.range.start.line, long.range.start.character) == (2, 6)
    assert "set_int_max_str_digits" not in "".join(d.message for d in load(text).diagnostics)


def test_a_tagged_number_too_long_to_read_is_shown_cut() -> None:
    (diagnostic,) = parse_yaml("n: !!int 1_" + "9" * 5000 + "\n").diagnostics
    assert diagnostic.message == "`1_999999999999999999... (5,002 characters)` cannot be read as !!int"
