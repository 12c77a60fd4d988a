"""Random character edits never crash or hang the server, and never yield a range outside the
document; golden ranges inside plain, quoted and block scalars."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_harness import covered, next_publish, open_doc
from lsprotocol import types as lsp

from lockgate.lsp.positions import LineIndex

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/fuzz.stratum.yaml"
EDIT = st.tuples(st.floats(0, 1), st.sampled_from(["insert", "delete"]),
                 st.sampled_from(list("${}[]:-'\"#|>\n 𝄞aZ.(")) )


def inside(text: str, rng: lsp.Range) -> bool:
    index = LineIndex(text)
    last = index.line_count - 1
    def ok(p):
        return 0 <= p.line <= last and p.character <= len(index.line(p.line).encode("utf-16-le")) // 2
    return ok(rng.start) and ok(rng.end) and (rng.start.line, rng.start.character) <= (rng.end.line, rng.end.character)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(edits=st.lists(EDIT, min_size=1, max_size=6))
async def test_random_edits(vscode, review_spec, edits):
    # one server across examples: each example opens its own version of the document
    text = review_spec
    pending = vscode.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    vscode.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=URI, language_id="yaml", version=1, text=text)))
    await asyncio.wait_for(pending, 10)
    version = 1
    for where, op, ch in edits:
        offset = int(where * len(text))
        index = LineIndex(text)
        start = index.to_client(index.position(offset))
        if op == "insert":
            end, new = start, ch
            text = text[:offset] + ch + text[offset:]
        else:
            stop = min(len(text), offset + 1)
            end, new = index.to_client(index.position(stop)), ""
            text = text[:offset] + text[stop:]
        version += 1
        vscode.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(range=lsp.Range(start=start, end=end), text=new)]))
    published = await asyncio.wait_for(next_publish(vscode, URI), 10)
    assert all(inside(text, d.range) for d in published)
    index = LineIndex(text)
    for probe in (0.1, 0.5, 0.9):
        pos = index.to_client(index.position(int(probe * len(text))))
        doc = lsp.TextDocumentIdentifier(uri=URI)
        await asyncio.wait_for(vscode.text_document_completion_async(lsp.CompletionParams(text_document=doc, position=pos)), 10)
        hover = await asyncio.wait_for(vscode.text_document_hover_async(lsp.HoverParams(text_document=doc, position=pos)), 10)
        assert hover is None or hover.range is None or inside(text, hover.range)
    symbols = await vscode.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    assert all(inside(text, s.range) for s in symbols)
    vscode.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    await next_publish(vscode, URI)


GOLDEN = """version: 1
contracts:
  Out:
    text: string
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${a.output}"
      contract: Out
    steps:
      - id: a
        do: plain ${input.nope} text
        out: Out
      - id: b
        do: 'it''s 𝄞 ${input.gone}'
        out: Out
      - id: c
        do: "tab\\t𝄞 ${input.lost}"
        out: Out
      - id: d
        do: |
          first line
            𝄞 ${input.miss} end
        out: Out
"""


async def test_golden_ranges_in_every_scalar_style(client):
    found = await open_doc(client, URI, GOLDEN)
    shown = sorted(covered(client, GOLDEN, d.range) for d in found if d.code == "LG404")
    # the dsl underlines the unknown path segment; the 𝄞 before it shifts UTF-16 and UTF-8 columns
    assert shown == [".gone", ".lost", ".miss", ".nope"], shown
    lines = {d.range.start.line for d in found if d.code == "LG404"}
    expected = {GOLDEN.splitlines().index(l) for l in GOLDEN.splitlines() if "${input." in l}
    assert lines == expected
