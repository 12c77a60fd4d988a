"""The invalid corpus: every file under ``corpus/invalid`` holds one problem, and its first line
says which diagnostic :func:`lockgate.dsl.loader.load` must report for it::

    # expect: LG202 5:7-5:12

(the code, then the range as an editor shows it: 1-based line:column, end exclusive).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lockgate.dsl.loader import load

CORPUS = Path(__file__).parent / "corpus" / "invalid"
HEADER = re.compile(rb"^# expect: (LG\d{3}) (\d+):(\d+)-(\d+):(\d+)\s*$")
FILES = sorted(CORPUS.glob("*.stratum.yaml"))


def _expectation(raw: bytes) -> tuple[str, tuple[int, int, int, int]]:
    first = raw.split(b"\n", 1)[0]
    match = HEADER.match(first)
    assert match, f"first line must be '# expect: LGxxx L:C-L:C', got {first!r}"
    code = match.group(1).decode()
    sl, sc, el, ec = (int(g) for g in match.groups()[1:])
    return code, (sl - 1, sc - 1, el - 1, ec - 1)


def test_corpus_is_populated() -> None:
    prefixes = {f.name[0] for f in FILES}
    assert len(FILES) >= 60 and {"1", "2"} <= prefixes


@pytest.mark.parametrize("path", FILES, ids=[f.name.removesuffix(".stratum.yaml") for f in FILES])
def test_expected_diagnostic(path: Path) -> None:
    raw = path.read_bytes()
    code, (sl, sc, el, ec) = _expectation(raw)
    assert path.name.startswith(code[2:]), "the file name starts with the code's number"
    result = load(raw, str(path))
    found = [
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in result.diagnostics
    ]
    assert (code, sl, sc, el, ec) in found, f"expected {code} at {sl}:{sc}-{el}:{ec}; got {found}"
    assert not result.ok
