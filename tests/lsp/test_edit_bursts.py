"""Rapid bursts of incremental edits, then a request: the answers are those of the latest text
(diagnostics, symbols, definitions), exactly what a fresh analysis of that text gives."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_harness import diagnostics, open_doc
from lsprotocol import types as lsp

from lockgate.lsp import diagnostics as diag
from lockgate.lsp import symbols
from lockgate.lsp.documents import analyze
from lockgate.lsp.positions import LineIndex

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/burst.stratum.yaml"
PIECES = ["implement", "review", "${review.output}", "\n", " ", "x", "🎉", "中", ":", "-", "\r\n", "\t"]
EDIT = st.tuples(st.floats(0, 1), st.integers(0, 12), st.sampled_from(PIECES))


def apply_edit(text: str, where: float, removed: int, new: str, encoding: str) -> tuple[str, lsp.Range]:
    """``text`` with ``removed`` characters at fraction ``where`` replaced by ``new``, and the
    client range of that edit."""
    index = LineIndex(text)
    start = index.position(int(where * len(text)))
    start_offset = index.offset(start)
    end = index.position(start_offset + removed)
    rng = lsp.Range(start=index.to_client(start, encoding), end=index.to_client(end, encoding))
    return text[:start_offset] + new + text[index.offset(end):], rng


def outline_of(text: str, now: str, encoding: str) -> list[lsp.DocumentSymbol] | None:
    """The symbols of ``text`` with their ranges clamped into ``now`` (None if ``text`` does not
    parse): what the server answers while ``now`` is mid-edit and ``text`` parsed last."""
    analysis = analyze(URI, text)
    if not analysis.parsed:
        return None
    return symbols.to_lsp(symbols.document_symbols(analysis), LineIndex(now), encoding)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(edits=st.lists(EDIT, min_size=2, max_size=25))
async def test_answers_after_a_burst_are_those_of_the_latest_text(client, review_spec, edits):
    text = review_spec
    texts = [text]
    await open_doc(client, URI, text)
    doc = lsp.VersionedTextDocumentIdentifier(uri=URI, version=1)
    for version, (where, removed, new) in enumerate(edits, start=2):
        text, rng = apply_edit(text, where, removed, new, client.encoding)
        texts.append(text)
        doc = lsp.VersionedTextDocumentIdentifier(uri=URI, version=version)
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=doc, content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new)]))
    found = await asyncio.wait_for(diagnostics(client, URI), 20)
    fresh = analyze(URI, text)
    expected = diag.to_lsp(fresh, client.encoding, **diag.client_options(client.capabilities))
    assert [(d.range, d.code, d.message) for d in found] == [(d.range, d.code, d.message) for d in expected]
    listed = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    plain = client.protocol._converter.unstructure  # lists and tuples of children compare equal
    latest = outline_of(text, text, client.encoding)
    if latest is not None:
        assert plain(listed) == plain(latest)
    else:  # mid-edit: the outline of a version that parsed (the last one analysed)
        earlier = [outline_of(t, text, client.encoding) for t in texts]
        assert plain(listed) in [plain(o) for o in earlier if o is not None]
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    client.opened.discard(URI)
    await asyncio.wait_for(_drain_close(client), 10)


async def _drain_close(client) -> None:
    """For push clients, wait for the empty publish closing sends (so examples do not mix)."""
    from lsp_harness import uses_pull

    if uses_pull(client):
        return
    while True:
        params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == URI and params.version is None and not params.diagnostics:
            return
