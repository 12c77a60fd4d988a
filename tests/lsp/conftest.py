"""pytest-lsp harness: the real server over stdio, driven with the capabilities of VS Code and
of Neovim (0.11: pull diagnostics, UTF-8 positions).

Starting a server costs about two seconds, so ``client`` (one server per editor),
``vscode`` and ``no_snippets`` (VS Code's capabilities without snippet support) are shared by
the whole session: tests do not depend on a fresh server, and every
document a test opened is closed after it (for push clients, waiting for the empty publish that
closing sends, so no diagnostics of one test reach the next). Tests that change the server's
settings use ``fresh_vscode``, a server of their own.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_asyncio
import pytest_lsp
from lsp_harness import uses_pull
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from lockgate.lsp.positions import encoding_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lockgate", "lsp"])
EDITORS = ["visual-studio-code", "neovim@v0.11.0"]
_LIVE: list[LanguageClient] = []


#: Requests the server sends that the editors' capabilities say they answer, and pytest-lsp's
#: client (1.0.1) does not: unanswered, pytest-lsp fails the test that was running.
ANSWERED = (lsp.CLIENT_REGISTER_CAPABILITY, lsp.WORKSPACE_SEMANTIC_TOKENS_REFRESH, lsp.WORKSPACE_INLAY_HINT_REFRESH)


def answer_server_requests(client: LanguageClient) -> None:
    """Answer the requests in ANSWERED as an editor does, keeping each one's params in
    ``client.requests[method]``."""
    client.requests = {method: [] for method in ANSWERED}
    for method in ANSWERED:
        if method not in client.protocol.fm.features:
            client.feature(method)(lambda params, method=method: client.requests[method].append(params))


async def _start(client: LanguageClient, editor: str, root: Path | None = None,
                 capabilities: lsp.ClientCapabilities | None = None) -> None:
    capabilities = capabilities or client_capabilities(editor)
    answer_server_requests(client)
    result = await client.initialize_session(
        lsp.InitializeParams(capabilities=capabilities, root_uri=root.as_uri() if root else None)
    )
    client.editor = editor
    client.encoding = encoding_of(result.capabilities.position_encoding)
    client.opened = set()
    _LIVE.append(client)


async def _stop(client: LanguageClient) -> None:
    _LIVE.remove(client)
    await client.shutdown_session()
    assert_no_handler_errors(client)


@pytest_lsp.fixture(config=SERVER, params=EDITORS, scope="session")
async def client(lsp_client: LanguageClient, request):
    await _start(lsp_client, request.param, EXAMPLES)
    yield
    await _stop(lsp_client)


@pytest_lsp.fixture(config=SERVER, scope="session")
async def vscode(lsp_client: LanguageClient):
    await _start(lsp_client, "visual-studio-code")
    yield
    await _stop(lsp_client)


@pytest_lsp.fixture(config=SERVER, scope="session")
async def no_snippets(lsp_client: LanguageClient):
    """VS Code's capabilities without snippet support (completion must send plain text)."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.completion.completion_item.snippet_support = False
    await _start(lsp_client, "visual-studio-code", capabilities=capabilities)
    yield
    await _stop(lsp_client)


@pytest_lsp.fixture(config=SERVER, loop_scope="session")
async def fresh_vscode(lsp_client: LanguageClient):
    """A server of the test's own (for tests that change its settings)."""
    await _start(lsp_client, "visual-studio-code")
    yield
    await _stop(lsp_client)


@pytest_asyncio.fixture(autouse=True, loop_scope="session")
async def close_documents():
    """After each test, close what it opened on the shared servers, and fail it if a handler
    failed meanwhile (handlers answer empty on a bug; the server logs it to the client)."""
    seen = {id(client): len(client.log_messages) for client in _LIVE}
    yield
    for client in _LIVE:
        for uri in sorted(client.opened):
            await close_doc(client, uri)
        assert_no_handler_errors(client, since=seen.get(id(client), 0))


def assert_no_handler_errors(client: LanguageClient, since: int = 0) -> None:
    errors = [m.message for m in client.log_messages[since:] if m.type == lsp.MessageType.Error]
    assert not errors, errors


async def close_doc(client: LanguageClient, uri: str) -> None:
    """Close ``uri``; for push clients, wait for the empty diagnostics closing publishes (every
    earlier publish of the document arrives before it)."""
    client.opened.discard(uri)
    pending = None if uses_pull(client) else asyncio.ensure_future(_cleared(client, uri))
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    if pending is not None:
        await asyncio.wait_for(pending, 10)


async def _cleared(client: LanguageClient, uri: str) -> None:
    while True:  # the server's publishes carry the analysed version; the one on close has none
        params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and not params.diagnostics and params.version is None:
            return


@pytest.fixture
def review_spec() -> str:
    return (EXAMPLES / "code-review.stratum.yaml").read_text(encoding="utf-8")
