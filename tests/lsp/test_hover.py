"""Hover end to end: step summary, contract shape, reference type, builtin, key docs."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from lsp_harness import at, covered, find, open_doc

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
