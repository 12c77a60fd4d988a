"""The semantic corpora: valid edge cases load without any diagnostic, and each lint file
produces the warning its first line names (``# expect: LG9xx L:C-L:C``, 1-based, end
exclusive) and no error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lockgate.dsl.loader import load

CORPUS = Path(__file__).parent / "corpus"
VALID = sorted((CORPUS / "valid").glob("*.stratum.yaml"))
LINT = sorted((CORPUS / "lint").glob("*.stratum.yaml"))
EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.stratum.yaml"))
HEADER = re.compile(r"^# expect: (LG9\d\d) (\d+):(\d+)-(\d+):(\d+)\s*$")


@pytest.mark.parametrize("path", VALID, ids=[p.stem for p in VALID])
def test_valid_edge_case_has_no_diagnostics(path: Path) -> None:
    result = load(path.read_text(), str(path))
    assert [(d.code, d.message) for d in result.diagnostics] == []


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_have_no_errors(path: Path) -> None:
    result = load(path.read_text(), str(path))
    assert result.errors == []


@pytest.mark.parametrize("path", LINT, ids=[p.stem for p in LINT])
def test_lint_corpus(path: Path) -> None:
    text = path.read_text()
    match = HEADER.match(text.split("\n", 1)[0])
    assert match, "first line must be '# expect: LG9xx L:C-L:C'"
    code, *numbers = match.groups()
    sl, sc, el, ec = (int(n) - 1 for n in numbers)
    result = load(text, str(path))
    found = [(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
             for d in result.diagnostics]
    assert (code, sl, sc, el, ec) in found
    assert result.ok, result.errors
    warning = next(d for d in result.diagnostics if d.code == code)
    assert warning.hint, "every lint warning carries a hint"
    assert load(text, str(path), lint=False).diagnostics == []


def test_corpora_are_populated() -> None:
    assert len(VALID) >= 6 and len(LINT) >= 6
    semantic = [p for p in (CORPUS / "invalid").glob("*.stratum.yaml") if p.name[0] in "34567"]
    assert len(semantic) >= 100
