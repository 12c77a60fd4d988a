"""A project configuration changed on disk, unwatched, reaches every open spec it governs
(review s12c #4).

A client that does not watch files (no dynamic registration of file watchers) tells the server
nothing when ``lockgate.toml`` changes; the server notices at a spec's save or diagnostics
pull. Before, only the saved (or pulled) spec was analysed again: the other open specs of the
same project kept the old configuration's LG905 until they were edited. Now the save or pull
that notices the change treats it as a watched change of that file: every open spec the
configuration governs is pushed again, or a pull client is asked to pull again.

The servers are the tests' own: they see files change under them.
"""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import pytest_lsp
from lsp_harness import AGENT_SPEC, WITHOUT_AGENT
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="session")

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lockgate", "lsp"])
WITH_AGENT = '[agents.myagent]\ntype = "python"\ncallable = "m:g"\n'
TIMEOUT = 10


def unwatching(pull: bool) -> lsp.ClientCapabilities:
    """VS Code's capabilities without file watching; diagnostics pulled (with refresh
    support) when ``pull``, else pushed."""
    caps = client_capabilities("visual-studio-code")
    caps.workspace.did_change_watched_files = None
    if pull:
        caps.text_document.diagnostic = lsp.DiagnosticClientCapabilities(related_document_support=False)
        caps.workspace.diagnostics = lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


async def start(client: LanguageClient, *, pull: bool) -> None:
    client.refreshes = asyncio.Queue()
    client.protocol.fm.features.pop(lsp.WORKSPACE_DIAGNOSTIC_REFRESH, None)  # pytest-lsp's own only counts them
    client.feature(lsp.WORKSPACE_DIAGNOSTIC_REFRESH)(lambda params: client.refreshes.put_nowait(params))
    client.set_configuration({"lint": True}, section="lockgate")
    await client.initialize_session(lsp.InitializeParams(capabilities=unwatching(pull)))


@pytest_lsp.fixture(config=SERVER, loop_scope="session")
async def pusher(lsp_client: LanguageClient):
    await start(lsp_client, pull=False)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER, loop_scope="session")
async def puller(lsp_client: LanguageClient):
    await start(lsp_client, pull=True)
    yield
    await lsp_client.shutdown_session()


def write_config(path, text: str) -> None:
    """Write a configuration file with a modification time of its own (a coarse clock must
    not hide the change)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def open_spec(client: LanguageClient, uri: str) -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=AGENT_SPEC)))


def save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))


def publishes(client: LanguageClient, uris: set[str]) -> asyncio.Future[dict[str, list[str]]]:
    """The codes of the next diagnostics pushed for each of ``uris``, from now on (the pushes
    are read from those the client keeps, so two arriving at once are both seen)."""
    for uri in uris:
        client.diagnostics.pop(uri, None)

    async def wait() -> None:
        while not uris <= set(client.diagnostics):
            await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    async def seen() -> dict[str, list[str]]:
        try:
            await asyncio.wait_for(wait(), TIMEOUT)
        except asyncio.TimeoutError:
            pass  # the assertion below says which spec was not pushed again
        return {uri: sorted(str(d.code) for d in client.diagnostics[uri]) for uri in uris if uri in client.diagnostics}

    return asyncio.ensure_future(seen())


async def pulled(client: LanguageClient, uri: str) -> list[str]:
    report = await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    return sorted(str(d.code) for d in report.items)


def project(tmp_path) -> tuple[str, str, str]:
    """A project with a configuration lacking ``myagent``, two specs in it, one outside."""
    (tmp_path / "project" / "specs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    write_config(tmp_path / "project" / "lockgate.toml", WITHOUT_AGENT)
    return ((tmp_path / "project" / "a.stratum.yaml").as_uri(),
            (tmp_path / "project" / "specs" / "b.stratum.yaml").as_uri(),
            (tmp_path / "elsewhere" / "c.stratum.yaml").as_uri())


async def test_saving_one_spec_pushes_every_spec_of_the_project_again(pusher, tmp_path):
    a, b, c = project(tmp_path)
    pending = publishes(pusher, {a, b, c})
    for uri in (a, b, c):
        open_spec(pusher, uri)
    assert all("LG905" in codes for codes in (await pending).values())
    write_config(tmp_path / "project" / "lockgate.toml", WITH_AGENT)
    pending = publishes(pusher, {a, b})
    save(pusher, a)
    again = await pending
    assert sorted(again) == sorted([a, b]), f"pushed again: {sorted(again)}"
    assert not [uri for uri, codes in again.items() if "LG905" in codes]


async def test_saving_one_spec_asks_a_pull_client_to_pull_every_spec_again(puller, tmp_path):
    a, b, c = project(tmp_path)
    for uri in (a, b, c):
        open_spec(puller, uri)
        assert "LG905" in await pulled(puller, uri)
    write_config(tmp_path / "project" / "lockgate.toml", WITH_AGENT)
    save(puller, a)
    await asyncio.wait_for(puller.refreshes.get(), TIMEOUT)
    assert "LG905" not in await pulled(puller, b)
    assert "LG905" in await pulled(puller, c)  # another project's configuration is the same


async def test_a_pull_that_notices_the_change_asks_for_the_other_specs_again(puller, tmp_path):
    a, b, _ = project(tmp_path)
    for uri in (a, b):
        open_spec(puller, uri)
        assert "LG905" in await pulled(puller, uri)
    write_config(tmp_path / "project" / "lockgate.toml", WITH_AGENT)
    assert "LG905" not in await pulled(puller, a)
    await asyncio.wait_for(puller.refreshes.get(), TIMEOUT)  # b's diagnostics changed too
    assert "LG905" not in await pulled(puller, b)
