"""Diagnostics end to end: codes, ranges, links, debounce, pull, closing."""

from __future__ import annotations

import asyncio

import pytest
from lsp_harness import covered, diagnostics, next_publish, open_doc, uses_pull
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/spec.stratum.yaml"
BAD_REF = """version: 1
contracts:
  Out:
    text: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${write.output}"
      contract: Out
    steps:
      - id: write
        do: "Write about ${input.topci} 𝄞 ${nope.output.text}"
        out: Out
"""


async def test_valid_spec_has_no_diagnostics(client, review_spec):
    assert await open_doc(client, URI, review_spec) == []


async def test_codes_ranges_and_links(client):
    found = await open_doc(client, URI, BAD_REF)
    by_code = {d.code: d for d in found}
    assert {"LG404", "LG403"} <= set(by_code), found
    assert covered(client, BAD_REF, by_code["LG404"].range).startswith("${input.topci}") or "topci" in covered(client, BAD_REF, by_code["LG404"].range)
    unknown = covered(client, BAD_REF, by_code["LG403"].range)
    assert "nope" in unknown and "𝄞" not in unknown
    for d in found:
        assert d.source == "lockgate"
        assert d.code_description is not None and d.code_description.href.endswith(d.code.lower())


async def test_yaml_syntax_error_is_in_range(client):
    text = "version: 1\nflows:\n  main: [unclosed\n"
    found = await open_doc(client, URI, text)
    assert found and all(d.range.end.line <= 3 for d in found)
    assert any(d.code == "LG103" for d in found)


async def test_edits_are_debounced_into_one_publish(vscode, review_spec):
    await open_doc(vscode, URI, review_spec)
    for version in range(2, 6):
        vscode.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=version),
                content_changes=[lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
                    text="#")],
            )
        )
    published = await next_publish(vscode, URI)
    assert published == []
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(vscode.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 0.5)


async def test_incremental_edit_introduces_and_fixes_an_error(client, review_spec):
    await open_doc(client, URI, review_spec)
    line = review_spec.splitlines().index("        out: Patch")
    edit = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=lsp.Position(line=line, character=13), end=lsp.Position(line=line, character=18)), text="Ptach")
    pending = None if uses_pull(client) else client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=2), content_changes=[edit]))
    found = list((await pending).diagnostics) if pending else await diagnostics(client, URI)
    [unknown] = [d for d in found if d.range.start.line == line]
    assert unknown.range.start.character == 13 and unknown.range.end.character == 18


async def test_close_clears_pushed_diagnostics(vscode):
    await open_doc(vscode, URI, BAD_REF)
    pending = vscode.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    vscode.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    params = await pending
    assert params.uri == URI and list(params.diagnostics) == []
