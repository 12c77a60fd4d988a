"""A name written through a YAML alias is a mention of it (review s12c #5).

``- id: &bid build`` with ``after: [*bid]``: the alias is a dependency on ``build`` as much as
``after: [build]`` is, but the symbol index skipped alias fields, so Find References did not
list it, and Go to Definition and hover at ``*bid`` answered nothing. The alias is now an
occurrence of the name at its own range; a rename still edits only the anchored value (once),
which the alias then stands for.
"""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, at, covered, find, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the shared servers live in the session's loop

URI = "file:///tmp/alias-nav-s13.stratum.yaml"
TEXT = """\
version: 1
contracts:
  R:
    v: string
flows:
  entry: main
  main:
    input:
      q: string
    output:
      from: "${last.output}"
      contract: R
    steps:
      - id: &bid build
        do: "go"
        agent: claude
        out: &c R
      - id: last
        after: [*bid]
        do: "x ${build.output.v}"
        agent: codex
        out: *c
"""
DOC = lsp.TextDocumentIdentifier(uri=URI)


def spot(client, needle: str, offset: int = 1) -> lsp.Position:
    return at(client, TEXT, *find(TEXT, needle, offset=offset))


def texts(client, found) -> list[str]:
    """The text each location or edit covers, in document order."""
    ordered = sorted(found, key=lambda x: (x.range.start.line, x.range.start.character))
    return [covered(client, TEXT, x.range) for x in ordered]


async def references(client, position: lsp.Position) -> list[str]:
    return texts(client, await client.text_document_references_async(lsp.ReferenceParams(
        text_document=DOC, position=position, context=lsp.ReferenceContext(include_declaration=True))))


async def test_references_list_the_alias_of_a_step_id(client):
    assert load(TEXT).ok
    await open_doc(client, URI, TEXT)
    expected = ["build", "*bid", "build"]  # the id, after: [*bid], ${build.output.v}
    assert await references(client, spot(client, "&bid build", 6)) == expected
    assert await references(client, spot(client, "[*bid]", 2)) == expected


async def test_definition_at_the_alias_is_the_anchored_step_id(client):
    await open_doc(client, URI, TEXT)
    found = await client.text_document_definition_async(lsp.DefinitionParams(
        text_document=DOC, position=spot(client, "[*bid]", 2)))
    [target] = found
    assert (target.range.start.line, covered(client, TEXT, target.range)) == (find(TEXT, "&bid build")[0], "build")


async def test_hover_at_the_alias_describes_the_step(client):
    await open_doc(client, URI, TEXT)
    answer = await client.text_document_hover_async(lsp.HoverParams(
        text_document=DOC, position=spot(client, "[*bid]", 3)))
    assert answer is not None and "**step** `build`" in answer.contents.value
    assert covered(client, TEXT, answer.range) == "*bid"


async def test_highlights_mark_the_alias_as_a_read(client):
    await open_doc(client, URI, TEXT)
    found = await client.text_document_document_highlight_async(lsp.DocumentHighlightParams(
        text_document=DOC, position=spot(client, "[*bid]", 2)))
    kinds = {covered(client, TEXT, h.range): h.kind for h in found}
    assert kinds["*bid"] == lsp.DocumentHighlightKind.Read
    assert len(found) == 3


async def test_a_contract_alias_is_a_reference_of_the_contract(client):
    await open_doc(client, URI, TEXT)
    found = await references(client, spot(client, "out: *c", len("out: *")))
    assert found == ["R", "R", "R", "*c"]  # its key, the flow's output contract, out: &c R, out: *c


@pytest.mark.parametrize("needle, offset", [("&bid build", 6), ("[*bid]", 2)])
async def test_a_rename_from_the_id_or_the_alias_leaves_the_alias_alone(client, needle, offset):
    await open_doc(client, URI, TEXT)
    edit = await client.text_document_rename_async(lsp.RenameParams(
        text_document=DOC, position=spot(client, needle, offset), new_name="compile"))
    edits = list(edit.document_changes[0].edits)
    assert texts(client, edits) == ["build", "build"]  # the anchored id once, and ${build...}
    renamed = apply_edits(client, TEXT, edits)
    assert "- id: &bid compile" in renamed and "after: [*bid]" in renamed and "${compile.output.v}" in renamed
    assert load(renamed).ok
