"""Open specs follow changes that are no edit of theirs (review s12lsp F1, F6).

F1: a client that pulls diagnostics (VS Code's vscode-languageclient 9 does) is asked to pull
again (``workspace/diagnostic/refresh``) after a settings change, and to ask for inlay hints
again (``workspace/inlayHint/refresh``) when they change: before, it kept showing the warnings
of a lint it had just turned off until the user typed in every open spec.

F6: a change of the spec's ``lockgate.toml`` (or ``pyproject.toml`` ``[tool.lockgate]``) reaches
the open spec: reported by ``workspace/didChangeWatchedFiles`` (pushed again, or a pull client
asked to pull again), or, for a client that does not report it, at the spec's next save or pull.
Before, the analysis of the spec's version was kept, with the LG905 of the old configuration.

The servers here are the tests' own: they run with capabilities of their own (pull diagnostics
with refresh support) and see files change under them.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest
import pytest_lsp
from lsp_harness import WITH_AGENT, WITHOUT_AGENT
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = pytest.mark.asyncio(loop_scope="session")

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "lockgate", "lsp"])
SPEC = """\
version: 1
contracts:
  R:
    v: string
flows:
  entry: main
  main:
    input:
      q: string
    output:
      from: "${b.output}"
      contract: R
    steps:
      - id: a
        do: "do ${input.q}"
        agent: myagent
        out: R
      - id: b
        do: "review ${a.output.v}"
        agent: claude
"""
PYPROJECT_WITH_AGENT = '[project]\nname = "x"\n\n[tool.lockgate.agents.myagent]\ntype = "python"\ncallable = "m:g"\n'
TIMEOUT = 10


def pull_capabilities() -> lsp.ClientCapabilities:
    """VS Code's capabilities as vscode-languageclient 9 sends them: diagnostics pulled, and
    the diagnostics and inlay hint refresh requests understood."""
    caps = client_capabilities("visual-studio-code")
    caps.text_document.diagnostic = lsp.DiagnosticClientCapabilities(related_document_support=False)
    caps.text_document.inlay_hint = lsp.InlayHintClientCapabilities()
    caps.workspace.diagnostics = lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace.did_change_watched_files = None  # the spec's save or pull notices a change
    return caps


class Refreshes:
    """The refresh requests the server sent, each kind awaitable once per request."""

    def __init__(self, client: LanguageClient) -> None:
        self.queues = {method: asyncio.Queue() for method in
                       (lsp.WORKSPACE_DIAGNOSTIC_REFRESH, lsp.WORKSPACE_INLAY_HINT_REFRESH,
                        lsp.WORKSPACE_SEMANTIC_TOKENS_REFRESH, lsp.CLIENT_REGISTER_CAPABILITY)}
        for method, queue in self.queues.items():
            client.protocol.fm.features.pop(method, None)  # pytest-lsp's own only counts them
            client.feature(method)(lambda params, queue=queue: queue.put_nowait(params))

    async def next(self, method: str) -> Any:
        return await asyncio.wait_for(self.queues[method].get(), TIMEOUT)

    def pending(self, method: str) -> int:
        return self.queues[method].qsize()


async def start(client: LanguageClient, capabilities: lsp.ClientCapabilities, settings: dict) -> None:
    client.set_configuration(settings, section="lockgate")
    await client.initialize_session(lsp.InitializeParams(capabilities=capabilities))


@pytest_lsp.fixture(config=SERVER, loop_scope="session")
async def puller(lsp_client: LanguageClient):
    """A server of the test's own, driven as VS Code drives it (diagnostics pulled)."""
    lsp_client.refreshes = Refreshes(lsp_client)
    await start(lsp_client, pull_capabilities(), {"lint": True, "inlayHints": {"enabled": True}})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER, loop_scope="session")
async def pusher(lsp_client: LanguageClient):
    """A server of the test's own, driven by a client that is sent its diagnostics (and asked
    to watch files, which it does as VS Code does)."""
    lsp_client.refreshes = Refreshes(lsp_client)
    await start(lsp_client, client_capabilities("visual-studio-code"), {"lint": True})
    yield
    await lsp_client.shutdown_session()


def open_spec(client: LanguageClient, uri: str, text: str = SPEC) -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)))


async def pull(client: LanguageClient, uri: str, previous: str | None = None):
    return await client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), previous_result_id=previous))


async def pulled(client: LanguageClient, uri: str) -> list[str]:
    return sorted(str(d.code) for d in (await pull(client, uri)).items)


async def published(client: LanguageClient, uri: str) -> list[str]:
    """The codes of the next diagnostics pushed for ``uri``."""
    async def wait() -> list[str]:
        while True:
            params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if params.uri == uri:
                return sorted(str(d.code) for d in params.diagnostics)
    return await asyncio.wait_for(wait(), TIMEOUT)


async def hints(client: LanguageClient, uri: str) -> list[str]:
    answer = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=30, character=0))))
    return [h.label for h in answer or []]


def change_settings(client: LanguageClient, settings: dict) -> None:
    client.set_configuration(settings, section="lockgate")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))


def write_config(path, text: str) -> None:
    """Write a configuration file and give it a modification time of its own: the file's stamp
    must differ from the one the open spec was analysed with even on a coarse clock."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


# -- F1: settings ---------------------------------------------------------------------------------


async def test_turning_lint_off_asks_the_pull_client_to_pull_again(puller, tmp_path):
    uri = (tmp_path / "pull.stratum.yaml").as_uri()
    open_spec(puller, uri)
    assert "LG905" in await pulled(puller, uri)
    assert await hints(puller, uri)
    change_settings(puller, {"lint": False, "inlayHints": {"enabled": True}})
    await puller.refreshes.next(lsp.WORKSPACE_DIAGNOSTIC_REFRESH)
    assert not [code for code in await pulled(puller, uri) if code.startswith("LG9")]
    await puller.refreshes.next(lsp.WORKSPACE_INLAY_HINT_REFRESH)  # the analysis they come from changed


async def test_turning_inlay_hints_off_asks_for_them_again(puller, tmp_path):
    uri = (tmp_path / "hints.stratum.yaml").as_uri()
    open_spec(puller, uri)
    assert await hints(puller, uri)
    change_settings(puller, {"lint": True, "inlayHints": {"enabled": False}})
    await puller.refreshes.next(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    assert await hints(puller, uri) == []
    assert puller.refreshes.pending(lsp.WORKSPACE_DIAGNOSTIC_REFRESH) == 0  # diagnostics are the same


async def test_agents_setting_withdraws_lg905_from_a_pull_client(puller, tmp_path):
    uri = (tmp_path / "agents.stratum.yaml").as_uri()
    open_spec(puller, uri)
    assert "LG905" in await pulled(puller, uri)
    change_settings(puller, {"lint": True, "agents": ["myagent"]})
    await puller.refreshes.next(lsp.WORKSPACE_DIAGNOSTIC_REFRESH)
    assert "LG905" not in await pulled(puller, uri)


async def test_a_size_limit_change_asks_for_semantic_tokens_again(puller, tmp_path):
    uri = (tmp_path / "tokens.stratum.yaml").as_uri()
    open_spec(puller, uri)
    await pull(puller, uri)
    change_settings(puller, {"lint": True, "maxDocumentBytes": 100})  # the spec is now too large
    await puller.refreshes.next(lsp.WORKSPACE_SEMANTIC_TOKENS_REFRESH)


# -- F6: the project configuration ----------------------------------------------------------------


async def test_the_server_asks_to_watch_the_configuration_files(pusher):
    registered = await pusher.refreshes.next(lsp.CLIENT_REGISTER_CAPABILITY)
    [registration] = registered.registrations
    assert registration.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES
    globs = sorted(w["globPattern"] for w in registration.register_options["watchers"])
    assert globs == ["**/lockgate.toml", "**/pyproject.toml"]


@pytest.mark.parametrize("config", ["lockgate.toml", "pyproject.toml"])
async def test_a_watched_configuration_change_reaches_a_pull_client(puller, tmp_path, config):
    if config == "lockgate.toml":
        (tmp_path / "project").mkdir()
        write_config(tmp_path / "project" / "lockgate.toml", WITHOUT_AGENT)
    (tmp_path / "project" / "specs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    uri = (tmp_path / "project" / "specs" / "flow.stratum.yaml").as_uri()
    other = (tmp_path / "elsewhere" / "flow.stratum.yaml").as_uri()
    open_spec(puller, uri)
    open_spec(puller, other)
    assert "LG905" in await pulled(puller, uri)
    before = await pull(puller, other)
    path = tmp_path / "project" / config
    write_config(path, WITH_AGENT if config == "lockgate.toml" else PYPROJECT_WITH_AGENT)
    changed = lsp.FileChangeType.Changed if config == "lockgate.toml" else lsp.FileChangeType.Created
    puller.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=path.as_uri(), type=changed)]))
    await puller.refreshes.next(lsp.WORKSPACE_DIAGNOSTIC_REFRESH)
    assert "LG905" not in await pulled(puller, uri)
    assert (await pull(puller, other, before.result_id)).kind == "unchanged"  # not in that project


async def test_a_watched_configuration_change_is_pushed_again(pusher, tmp_path):
    write_config(tmp_path / "lockgate.toml", WITHOUT_AGENT)
    uri = (tmp_path / "flow.stratum.yaml").as_uri()
    pending = asyncio.ensure_future(published(pusher, uri))
    open_spec(pusher, uri)
    assert "LG905" in await pending
    write_config(tmp_path / "lockgate.toml", WITH_AGENT)
    pending = asyncio.ensure_future(published(pusher, uri))
    pusher.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=(tmp_path / "lockgate.toml").as_uri(), type=lsp.FileChangeType.Changed)]))
    assert "LG905" not in await pending


async def test_an_unwatched_change_is_seen_at_the_next_save(pusher, tmp_path):
    write_config(tmp_path / "lockgate.toml", WITHOUT_AGENT)
    uri = (tmp_path / "flow.stratum.yaml").as_uri()
    pending = asyncio.ensure_future(published(pusher, uri))
    open_spec(pusher, uri)
    assert "LG905" in await pending
    write_config(tmp_path / "lockgate.toml", WITH_AGENT)
    pending = asyncio.ensure_future(published(pusher, uri))
    pusher.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert "LG905" not in await pending


async def test_an_unwatched_change_is_seen_at_the_next_pull(puller, tmp_path):
    write_config(tmp_path / "lockgate.toml", WITHOUT_AGENT)
    uri = (tmp_path / "flow.stratum.yaml").as_uri()
    open_spec(puller, uri)
    assert "LG905" in await pulled(puller, uri)
    write_config(tmp_path / "lockgate.toml", WITH_AGENT)
    report = await pull(puller, uri)
    assert "LG905" not in [d.code for d in report.items]
    again = await pull(puller, uri, report.result_id)  # the same configuration: no new analysis
    assert again.kind == "unchanged"
