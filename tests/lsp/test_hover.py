"""Hover end to end: step summary, contract shape, reference type, builtin, key docs."""

from __future__ import annotations

import pytest
from lsp_harness import at, covered, find, open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/hover.stratum.yaml"


async def hover(client, text, needle, offset=1, occurrence=0):
    line, col = find(text, needle, occurrence, offset)
    return await client.text_document_hover_async(
        lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, text, line, col)))


async def test_hovers(client, review_spec):
    await open_doc(client, URI, review_spec)
    step = await hover(client, review_spec, "on_revise: implement", offset=12)
    assert "**step** `implement`" in step.contents.value and "tests_passed: boolean" in step.contents.value
    assert covered(client, review_spec, step.range) == "implement"
    ref = await hover(client, review_spec, "${implement.output}", occurrence=1, offset=3)
    assert "`${implement.output}`: `Patch`" in ref.contents.value
    builtin = await hover(client, review_spec, "len(result.files)")
    assert "len(x)" in builtin.contents.value
    member = await hover(client, review_spec, "result.tests_passed", offset=9)
    assert "`result.tests_passed`: `boolean`" in member.contents.value
    key = await hover(client, review_spec, "agent: claude")
    assert "agent" in key.contents.value and "default claude" in key.contents.value
    contract = await hover(client, review_spec, "Finding[]")
    assert "severity: low|medium|high" in contract.contents.value


async def test_hover_right_after_an_edit(client, review_spec):
    # sent before the edit's analysis is awaited: answered from the last good analysis (or the
    # new one, if it is already done); either way the range is in the edited text
    await open_doc(client, URI, review_spec)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
            text="# one\n# two\n")]))
    edited = "# one\n# two\n" + review_spec
    step = await hover(client, edited, "on_revise: implement", offset=12)
    assert "**step** `implement`" in step.contents.value
    assert covered(client, edited, step.range) == "implement"
