"""Two writes of a project configuration within one clock tick are both seen.

The agents a spec's ``lockgate.toml`` configures were cached by the file's modification time
alone: a second write in the same tick of the file system's clock (coarse on some file
systems) left the server with the first write's agents, so LG905 stayed on an agent the file
now configures, however the change was reported. The cache is now keyed on the file's
modification time, size and inode (as the analysis' configuration stamp is): a rewrite of the
same size within the same tick still goes unseen.
"""

from __future__ import annotations

import os
import sys

import pytest
import pytest_lsp
from lsp_harness import AGENT_SPEC, WITH_AGENT, WITHOUT_AGENT
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="session")

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lockgate", "lsp"])


@pytest_lsp.fixture(config=SERVER, loop_scope="session")
async def puller(lsp_client: LanguageClient):
    """A server of the test's own (it sees files change under it); diagnostics pulled."""
    caps = client_capabilities("visual-studio-code")
    caps.text_document.diagnostic = lsp.DiagnosticClientCapabilities(related_document_support=False)
    caps.workspace.did_change_watched_files = None  # no watcher to register; changes are told below
    lsp_client.set_configuration({"lint": True}, section="lockgate")
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=caps))
    yield
    await lsp_client.shutdown_session()


async def pulled(client: LanguageClient, uri: str) -> list[str]:
    report = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    return sorted(str(d.code) for d in report.items)


async def test_a_rewrite_in_the_same_clock_tick_is_seen(puller, tmp_path):
    config = tmp_path / "lockgate.toml"
    config.write_text(WITHOUT_AGENT)
    tick = config.stat().st_mtime_ns
    uri = (tmp_path / "flow.stratum.yaml").as_uri()
    puller.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=AGENT_SPEC)))
    assert "LG905" in await pulled(puller, uri)

    config.write_text(WITH_AGENT)
    os.utime(config, ns=(tick, tick))  # written again within the same tick of the clock
    assert config.stat().st_mtime_ns == tick
    puller.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=config.as_uri(), type=lsp.FileChangeType.Changed)]))
    assert "LG905" not in await pulled(puller, uri)
