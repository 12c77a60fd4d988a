"""Definition, references and highlight, including mentions inside ${...} and routes."""

from __future__ import annotations

import pytest
from lsp_harness import at, covered, find, open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/nav.stratum.yaml"


async def test_definition_references_highlight(client, review_spec):
    await open_doc(client, URI, review_spec)
    doc = lsp.TextDocumentIdentifier(uri=URI)
    line, col = find(review_spec, "${implement.output}", occurrence=1, offset=4)
    position = at(client, review_spec, line, col)
    [target] = await client.text_document_definition_async(lsp.DefinitionParams(text_document=doc, position=position))
    assert target.range.start.line == review_spec.splitlines().index("      - id: implement")
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc, position=position, context=lsp.ReferenceContext(include_declaration=True)))
    assert len(refs) == 4 and {covered(client, review_spec, r.range) for r in refs} == {"implement"}
    marks = await client.text_document_document_highlight_async(lsp.DocumentHighlightParams(text_document=doc, position=position))
    assert sum(h.kind == lsp.DocumentHighlightKind.Write for h in marks) == 1
    line, col = find(review_spec, "findings: Finding[]", offset=11)
    [contract] = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=doc, position=at(client, review_spec, line, col)))
    assert covered(client, review_spec, contract.range) == "Finding"
