"""A hostile or sloppy editor on the wire: requests whose params do not decode, and document
sync for documents that are not open. Every request gets an answer (a result or an LSP error),
nothing pops up in the editor, and the server keeps serving."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from conftest import SERVER
from lsp_harness import find, open_doc
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities, make_test_lsp_client

from lockgate.lsp.diagnostics import MAX_SHOWN
from lockgate.lsp.positions import LineIndex

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/hostile-wire.stratum.yaml"
NEVER = "file:///tmp/never-opened.stratum.yaml"
DOC = {"uri": URI}

UNDECODABLE = [
    ("textDocument/hover", {"textDocument": DOC, "position": {"line": -1, "character": 0}}),
    ("textDocument/completion", {"textDocument": DOC, "position": {"line": 0, "character": -3}}),
    ("textDocument/definition", {"textDocument": DOC, "position": {"line": "two", "character": 0}}),
    ("textDocument/references", {"textDocument": DOC, "position": {"line": 1, "character": 1}}),  # no context
    ("textDocument/rename", {"textDocument": DOC, "position": {"line": None, "character": 0}, "newName": "x"}),
    ("textDocument/codeAction", {"textDocument": DOC, "range": None, "context": {"diagnostics": []}}),
    ("textDocument/documentSymbol", {}),
]


def send_raw(client, method: str, params: dict) -> asyncio.Future:
    """Send a request as a plain JSON object, the way a sloppy editor might: pygls would type
    and check the params first (and refuse these)."""
    protocol = client.protocol
    msg_id = str(uuid.uuid4())
    future = asyncio.get_running_loop().create_future()
    protocol._request_futures[msg_id] = future
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return future


async def hover_works(client, text: str) -> None:
    """The server still answers a well-formed request on the open document."""
    line, character = find(text, "contracts:", offset=2)
    answer = await asyncio.wait_for(client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=lsp.Position(line=line, character=character))), 10)
    assert answer is not None and "contracts" in answer.contents.value


@pytest.mark.parametrize(("method", "params"), UNDECODABLE, ids=[m + str(i) for i, (m, _) in enumerate(UNDECODABLE)])
async def test_undecodable_request_is_answered_with_invalid_params(client, review_spec, method, params):
    await open_doc(client, URI, review_spec)
    shown = len(client.messages)
    with pytest.raises(JsonRpcException) as raised:
        await asyncio.wait_for(send_raw(client, method, params), 10)
    assert raised.value.code == -32602
    await hover_works(client, review_spec)
    assert client.messages[shown:] == []  # answered, not shown to the user


async def test_sync_of_a_document_never_opened_is_quiet(client, review_spec):
    await open_doc(client, URI, review_spec)
    shown = len(client.messages)
    never = lsp.VersionedTextDocumentIdentifier(uri=NEVER, version=2)
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=never, content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="version: 1\n")]))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=NEVER)))
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=NEVER)))
    await hover_works(client, review_spec)  # answered after the notifications were handled, in order
    assert client.messages[shown:] == []
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=NEVER), position=lsp.Position(line=0, character=2)))
    assert hover is None  # the change did not open it


async def test_document_closed_twice_and_reopened(client, review_spec):
    await open_doc(client, URI, review_spec)
    closing = lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=URI))
    client.text_document_did_close(closing)
    client.text_document_did_close(closing)
    client.opened.discard(URI)
    shown = len(client.messages)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    assert symbols == []
    await open_doc(client, URI, review_spec)
    await hover_works(client, review_spec)
    assert client.messages[shown:] == []


LONG_REFS = 4000


async def test_long_line_of_references_has_exact_ranges(client):
    # one line holding thousands of diagnostics after wide characters: every range must cover
    # its own reference (positions on the line are converted per wide character, not per prefix)
    body = "".join(f"🎉中 ${{input.n{i}}} " for i in range(LONG_REFS))
    text = f"version: 1\nflows:\n  main:\n    input:\n      q: string\n    steps:\n      - id: a\n        do: {body}\n"
    found = await asyncio.wait_for(open_doc(client, URI, text), 60)
    index = LineIndex(text)
    spans = sorted(index.offset_from_client(d.range.start, client.encoding) for d in found if d.code == "LG404")
    names = [text[start:text.index("}", start)] for start in spans]
    # the first MAX_SHOWN problems in document order, then one counting the rest
    assert names == [f".n{i}" for i in range(len(names))] and len(names) > MAX_SHOWN - 10
    assert found[-1].message.endswith("more problems not shown; fix these first")
    assert all(d.range.start.line == 7 for d in found if d.code == "LG404")


async def test_requests_after_shutdown_are_refused_not_dropped(fresh_vscode, review_spec):
    # LSP: requests after `shutdown` error with InvalidRequest (pygls never answered them);
    # a second `shutdown` (the fixture's teardown sends one) is answered like the first
    await open_doc(fresh_vscode, URI, review_spec)
    await asyncio.wait_for(fresh_vscode.shutdown_async(None), 10)
    for method, params in [("textDocument/hover", {"textDocument": DOC, "position": {"line": 0, "character": 0}}),
                           ("textDocument/documentSymbol", {"textDocument": DOC})]:
        with pytest.raises(JsonRpcException) as raised:
            await asyncio.wait_for(send_raw(fresh_vscode, method, params), 10)
        assert raised.value.code == -32600
    fresh_vscode.opened.clear()  # closing after shutdown would not be answered


@pytest.mark.parametrize("shutdown_first, code", [(True, 0), (False, 1)], ids=["shutdown-exit", "exit-alone"])
async def test_exit_code_says_whether_shutdown_came_first(shutdown_first, code):
    # LSP: exit ends the process with 0 after a shutdown request, with 1 without one
    # (pygls swallowed the SystemExit carrying the code, so the process always ended with 0)
    client = make_test_lsp_client()
    await client.start_io(*SERVER.server_command)
    try:
        await client.initialize_session(lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
        if shutdown_first:
            await asyncio.wait_for(client.shutdown_async(None), 10)
        client.exit(None)
        assert await asyncio.wait_for(client._server.wait(), 30) == code
    finally:
        await client.stop()
