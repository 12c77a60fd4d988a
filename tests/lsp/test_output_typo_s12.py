"""A misspelled ``.output`` in a reference (review s12lsp F3).

``${build.outptu.artifact}`` reads as a carry reference (§3.1 rule 3). It was reported as "not
a declared carry variable" in a spec without carry, and its preferred quick fix inserted
``.output`` before the typo: ``${build.output.outptu.artifact}``, still an error (LG404). The
diagnostic now says the segment is a near miss of the step's ``output`` and its fix replaces it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_harness import apply_edits, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

URI = "file:///tmp/output-typo-s12.stratum.yaml"
SPEC = """version: 1
contracts:
  Build:
    artifact: string
    put: string
flows:
  entry: main
  main:
    input:
      q: string
    output:
      from: "${ship.output}"
      contract: Build
    steps:
      - id: build
        do: "Build ${input.q}"
        out: Build
      - id: ship
        do: "Ship ${build.output.artifact}"
        out: Build
"""


def typed(reference: str) -> str:
    """The spec with ``ship``'s reference written as ``reference``."""
    return SPEC.replace("${build.output.artifact}", reference)


def lg407(text: str):
    found = [d for d in load(text).diagnostics if d.code == "LG407"]
    assert len(found) == 1, load(text).diagnostics
    return found[0]


def fixed(text: str, diagnostic) -> str:
    """``text`` with the diagnostic's fix applied (one edit on one line)."""
    (edit,) = diagnostic.fix.edits
    lines = text.split("\n")
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = line[:edit.range.start.character] + edit.new_text + line[edit.range.end.character:]
    return "\n".join(lines)


def test_the_spec_is_valid():
    assert load(SPEC).ok


@pytest.mark.parametrize("typo", ["outptu", "ouput", "otuput", "Output", "outpt"])
def test_a_near_miss_of_output_is_named_and_its_fix_replaces_the_segment(typo):
    text = typed(f"${{build.{typo}.artifact}}")
    found = lg407(text)
    assert "carry" not in found.message
    assert f"'build.{typo}'" in found.message and ".output" in found.message
    assert "${build.output.artifact}" in found.message
    repaired = fixed(text, found)
    assert "${build.output.artifact}" in repaired and load(repaired).ok


def test_a_contract_field_after_a_missing_output_keeps_its_name():
    """``put`` is close to ``output``, but it is a field of Build: ``.output`` was left out."""
    text = typed("${build.put}")
    repaired = fixed(text, lg407(text))
    assert "${build.output.put}" in repaired and load(repaired).ok


_LETTERS = st.sampled_from("outpt")


@settings(max_examples=60, deadline=None)
@given(edit=st.sampled_from(["swap", "drop", "double", "replace"]), at=st.integers(0, 5), letter=_LETTERS)
def test_single_slips_of_output_are_fixed_to_a_valid_spec(edit, at, letter):
    """One swapped, dropped, doubled or replaced letter of ``output``: when the diagnostic
    offers a fix, the fixed spec is valid."""
    word = list("output")
    if edit == "swap" and at < 5:
        word[at], word[at + 1] = word[at + 1], word[at]
    elif edit == "drop":
        del word[at]
    elif edit == "double":
        word.insert(at, word[at])
    else:
        word[at] = letter
    slip = "".join(word)
    if slip == "output":
        return
    text = typed(f"${{build.{slip}.artifact}}")
    found = lg407(text)
    if found.fix is not None:
        repaired = fixed(text, found)
        assert load(repaired).ok, (slip, found.message, repaired)


def test_validate_prints_the_fix(tmp_path: Path):
    path = tmp_path / "typo.stratum.yaml"
    path.write_text(typed("${build.outptu.artifact}"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "lockgate", "validate", str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "fix: Change to '${build.output.artifact}'" in result.stdout + result.stderr


@pytest.mark.asyncio(loop_scope="session")
async def test_the_preferred_quick_fix_gives_a_valid_spec(client):
    text = typed("${build.outptu.artifact}")
    found = [d for d in await open_doc(client, URI, text) if d.code == "LG407"]
    assert len(found) == 1 and "carry" not in found[0].message
    answer = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), range=found[0].range,
        context=lsp.CodeActionContext(diagnostics=found)))
    preferred = [a for a in answer or [] if isinstance(a, lsp.CodeAction) and a.is_preferred and a.edit is not None]
    assert len(preferred) == 1
    repaired = apply_edits(client, text, preferred[0].edit.document_changes[0].edits)
    assert "${build.output.artifact}" in repaired and load(repaired).ok
