"""Contract names in field types are read with the type grammar (review s10 F5 #1): an enum
member spelled like a contract (``stage: Draft|Review|Final`` beside a contract ``Draft``) is a
string, not a use of the contract, for rename, definition, hover and references."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, at, covered, find, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/review-s10-type-names.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Draft:
    text: string
    stage: Draft|Review|Final
flows:
  entry: main
  main:
    input: {topic: string, earlier: "Draft[]?"}
    output: {from: "${write.output}", contract: Draft}
    steps:
      - id: write
        do: "Write about ${input.topic}"
        out: Draft
        ensure:
          - expr: "result.stage == 'Draft'"
"""
DOC = lsp.TextDocumentIdentifier(uri=URI)


def _position(client, needle: str, offset: int) -> lsp.Position:
    return at(client, SPEC, *find(SPEC, needle, offset=offset))


async def test_rename_contract_keeps_enum_members(client):
    await open_doc(client, URI, SPEC)
    edit = await client.text_document_rename_async(
        lsp.RenameParams(text_document=DOC, position=_position(client, "Draft:", 1), new_name="Sketch"))
    renamed = apply_edits(client, SPEC, edit.document_changes[0].edits)
    assert "stage: Draft|Review|Final" in renamed and 'earlier: "Sketch[]?"' in renamed
    assert "contract: Sketch}" in renamed and "out: Sketch" in renamed
    assert load(renamed).ok


async def test_enum_member_is_no_contract_reference(client):
    await open_doc(client, URI, SPEC)
    member = _position(client, "Draft|Review", 1)
    found = await client.text_document_definition_async(lsp.DefinitionParams(text_document=DOC, position=member))
    assert not found
    assert await client.text_document_hover_async(lsp.HoverParams(text_document=DOC, position=member)) is None
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=DOC, position=_position(client, "Draft:", 1), context=lsp.ReferenceContext(include_declaration=True)))
    lines = sorted(r.range.start.line for r in refs)
    assert [SPEC.splitlines()[n].strip() for n in lines] == [
        "Draft:", 'input: {topic: string, earlier: "Draft[]?"}', 'output: {from: "${write.output}", contract: Draft}', "out: Draft"]
    assert {covered(client, SPEC, r.range) for r in refs} == {"Draft"}
