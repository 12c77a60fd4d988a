"""Rename and references of names written with YAML node properties (review s12lsp F2).

``- id: &bid build`` with ``after: [*bid]``: libyaml starts the anchored scalar at ``&bid``,
so the step id's range covered ``bid build`` and the alias was indexed as a second copy of the
definition. The rename sent two identical overlapping edits (VS Code refuses them) that, applied,
replaced the anchor and left the id null and ``*bid`` unknown. A rename must edit the name's own
characters once; the alias refers to the node and needs no edit (it is a reference of the
name, at its own range, since review s12c #5: see test_alias_nav_s13).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_harness import apply_edits, at, covered, find, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load
from lockgate.lsp import index
from lockgate.lsp.documents import analyze
from lockgate.lsp.positions import LineIndex

URI = "file:///tmp/anchor-rename-s12.stratum.yaml"
SESSION = pytest.mark.asyncio(loop_scope="session")  # the shared servers live in the session's loop

SPEC = """version: 1
contracts:
  {key}:
    v: string
flows:
  entry: main
  main:
    input:
      q: string
    output:
      from: "${{last.output}}"
      contract: R
    steps:
      - id: {build}
        do: {do}
        agent: claude
        out: {out}
      - id: last
        after: [{after}]
        do: "x ${{build.output.v}}"
        agent: codex
        out: {out_last}
"""
PLAIN = {"key": "R", "build": "build", "do": '"go"', "out": "R", "after": "build", "out_last": "R"}


def spec(**written: str) -> str:
    return SPEC.format(**{**PLAIN, **written})


def _edits(edit: lsp.WorkspaceEdit) -> list:
    return list(edit.document_changes[0].edits)


@SESSION
async def test_renaming_an_anchored_step_id_edits_the_name_once_and_keeps_the_anchor(client):
    text = spec(build="&bid build", after="*bid")
    assert load(text).ok
    await open_doc(client, URI, text)
    doc = lsp.TextDocumentIdentifier(uri=URI)
    where = at(client, text, *find(text, "&bid build", offset=6))
    prepared = await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(text_document=doc, position=where))
    assert (covered(client, text, prepared.range), prepared.placeholder) == ("build", "build")

    edits = _edits(await client.text_document_rename_async(lsp.RenameParams(text_document=doc, position=where, new_name="compile")))
    assert sorted(covered(client, text, e.range) for e in edits) == ["build", "build"]  # the id and ${build...}
    starts = {(e.range.start.line, e.range.start.character) for e in edits}
    assert len(starts) == len(edits), "overlapping edits"
    renamed = apply_edits(client, text, edits)
    assert "- id: &bid compile" in renamed and "after: [*bid]" in renamed and "${compile.output.v}" in renamed
    assert load(renamed).ok

    found = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc, position=where, context=lsp.ReferenceContext(include_declaration=True)))
    ranges = [(r.range.start.line, r.range.start.character, r.range.end.line, r.range.end.character) for r in found]
    assert len(ranges) == len(set(ranges)) == 3  # the id, *bid (once), ${build...}
    assert sorted(covered(client, text, r.range) for r in found) == ["*bid", "build", "build"]


@pytest.mark.parametrize("written, needle", [
    ({"build": "!!str build"}, "!!str build"),
    ({"build": "!!str &bid build", "after": "*bid"}, "&bid build"),
    ({"build": '&bid "build"', "after": "*bid"}, '"build"'),
    ({"build": "&bid\n          build", "after": "*bid"}, "\n          build"),
])
@SESSION
async def test_step_ids_after_properties_rename_to_a_valid_spec(vscode, written, needle):
    text = spec(**written)
    assert load(text).ok
    await open_doc(vscode, URI, text)
    line, col = find(text, "build", occurrence=0)
    edit = await vscode.text_document_rename_async(lsp.RenameParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(vscode, text, line, col), new_name="compile"))
    edits = _edits(edit)
    assert all(covered(vscode, text, e.range) == "build" for e in edits)
    renamed = apply_edits(vscode, text, edits)
    assert needle.replace("build", "compile") in renamed and load(renamed).ok


@pytest.mark.parametrize("written", [
    {"out": "&c R", "out_last": "*c"},  # a contract name anchored in one step, aliased in another
    {"key": "&k R"},  # an anchored contract key
])
@SESSION
async def test_contract_names_with_anchors_rename_to_a_valid_spec(vscode, written):
    text = spec(**written)
    assert load(text).ok
    await open_doc(vscode, URI, text)
    line, col = find(text, "contract: R", offset=len("contract: "))
    edits = _edits(await vscode.text_document_rename_async(lsp.RenameParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(vscode, text, line, col), new_name="Res")))
    assert all(covered(vscode, text, e.range) == "R" for e in edits)
    assert len({(e.range.start.line, e.range.start.character) for e in edits}) == len(edits)
    renamed = apply_edits(vscode, text, edits)
    assert load(renamed).ok and "Res" in renamed


_ANCHOR = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_STYLE = st.sampled_from(["{}", '"{}"', "'{}'"])


@settings(max_examples=60, deadline=None)
@given(anchor=_ANCHOR, tag=st.booleans(), tag_first=st.booleans(), style=_STYLE, alias=st.booleans(),
       name=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
def test_every_indexed_range_covers_the_name_once(anchor, tag, tag_first, style, alias, name):
    """Whatever properties a step id is written with, each occurrence covers exactly the
    name (an alias of it: the alias), only names are renamed, and no (symbol, range) is listed
    twice."""
    if name in ("last", "input", "true", "false", "null", "yes", "no", "on", "off", "y", "n"):
        name = f"s_{name}"
    props = [f"&{anchor}"] + (["!!str"] if tag else [])
    if tag_first:
        props.reverse()
    text = spec(build=" ".join([*props, style.format(name)]), after=f"*{anchor}" if alias else name,
                do=f'"x ${{input.q}}"').replace("${build.output.v}", f"${{{name}.output.v}}")
    assert load(text).ok
    found = index.index_of(analyze(URI, text))
    lines = LineIndex(text)
    mentions = found.references(("step", "main", name))
    assert [o.definition for o in mentions].count(True) == 1
    assert len(mentions) == 3  # the id, ${name.output.v}, and after: [name] or [*anchor]
    for occ in mentions:
        assert text[lines.offset(occ.range.start):lines.offset(occ.range.end)] == (f"*{anchor}" if occ.alias else name)
    assert [o.alias for o in mentions].count(True) == alias
    assert len(found.renamable(("step", "main", name))) == 2 + (not alias)
    keys = [(o.key, o.range) for o in found.occurrences]
    assert len(keys) == len(set(keys))
