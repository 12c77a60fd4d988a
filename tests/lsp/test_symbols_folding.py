"""Document symbols (flows ▸ steps, contracts ▸ fields) and folding ranges."""

from __future__ import annotations

import pytest
from lsp_harness import open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/symbols.stratum.yaml"


async def test_symbols(client, review_spec):
    await open_doc(client, URI, review_spec)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    by_name = {s.name: s for s in symbols}
    assert [c.name for c in by_name["Review"].children] == ["verdict", "findings"]
    steps = [c.name for c in by_name["change"].children if c.kind == lsp.SymbolKind.Function]
    assert steps == ["implement", "review", "sign_off"]
    lines = review_spec.splitlines()
    implement = by_name["change"].children[0]
    assert implement.range.start.line == lines.index("      - id: implement")
    assert implement.range.end.line == lines.index("        attempts: 3")


async def test_folding(client, review_spec):
    await open_doc(client, URI, review_spec)
    folds = await client.text_document_folding_range_async(
        lsp.FoldingRangeParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    lines = review_spec.splitlines()
    spans = {(f.start_line, f.end_line) for f in folds}
    assert (lines.index("contracts:"), lines.index("    note: string")) in spans
    assert (lines.index("        do: |"), lines.index("          Run the test suite before you report.")) in spans


async def test_symbols_stay_while_the_yaml_is_broken_mid_edit(client, review_spec):
    uri = "file:///tmp/symbols-broken.stratum.yaml"
    await open_doc(client, uri, review_spec)
    broken = review_spec.replace("after: [review]", "after: [rev")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=broken)]))
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    by_name = {s.name: s for s in symbols}
    steps = [c.name for c in by_name["change"].children if c.kind == lsp.SymbolKind.Function]
    assert steps == ["implement", "review", "sign_off"]
