"""Helpers for the language-server tests: open documents, await diagnostics, convert positions."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from lockgate.dsl.diagnostics import Position
from lockgate.lsp.positions import LineIndex

# a spec whose main flow's steps the test writes after it (at six columns: ``      - id: ...``)
STEPS_HEAD = """\
version: 1
contracts:
  Verdict:
    score: number
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${plan.output}"
      contract: Verdict
    steps:
"""


# a spec whose one step uses agent 'myagent', and project configurations without and with it
AGENT_SPEC = """\
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
      from: "${a.output}"
      contract: R
    steps:
      - id: a
        do: "do ${input.q}"
        agent: myagent
        out: R
"""
WITHOUT_AGENT = '[agents.other]\ntype = "python"\ncallable = "m:f"\n'
WITH_AGENT = '[agents.other]\ntype = "python"\ncallable = "m:f"\n\n[agents.myagent]\ntype = "python"\ncallable = "m:g"\n'


def uses_pull(client: LanguageClient) -> bool:
    return client.editor.startswith("neovim@v0.1")


async def next_publish(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    """Wait (with the client's notification API) for the next diagnostics of ``uri``."""
    while True:
        params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri:
            return list(params.diagnostics)


async def diagnostics(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    """The current diagnostics of an open document, pulled or awaited as the client would."""
    if uses_pull(client):
        report = await client.text_document_diagnostic_async(
            lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        )
        return list(report.items)
    return await next_publish(client, uri)


async def open_doc(client: LanguageClient, uri: str, text: str) -> list[lsp.Diagnostic]:
    """Open a document and return its first diagnostics (the session's cleanup closes it)."""
    client.opened.add(uri)
    pending = None if uses_pull(client) else client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text))
    )
    if pending is not None:
        params = await pending
        if params.uri == uri:
            return list(params.diagnostics)
    return await diagnostics(client, uri)


def at(client: LanguageClient, text: str, line: int, character: int) -> lsp.Position:
    """A code-point position in ``text`` as the client's position."""
    return LineIndex(text).to_client(Position(line, character), client.encoding)


def find(text: str, needle: str, occurrence: int = 0, offset: int = 0) -> tuple[int, int]:
    """(line, character) of the ``occurrence``-th ``needle`` in ``text``, plus ``offset``."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    pos = LineIndex(text).position(index + offset)
    return pos.line, pos.character


def covered(client: LanguageClient, text: str, rng: lsp.Range) -> str:
    """The document text a client range covers."""
    index = LineIndex(text)
    start = index.offset(index.from_client(rng.start, client.encoding))
    end = index.offset(index.from_client(rng.end, client.encoding))
    return text[start:end]


def apply_edits(client: LanguageClient, text: str, edits) -> str:
    """``text`` with the client-range ``edits`` applied, the last first so earlier offsets hold."""
    index = LineIndex(text)
    spans = sorted(((index.offset_from_client(e.range.start, client.encoding),
                     index.offset_from_client(e.range.end, client.encoding), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


async def completion_at(client: LanguageClient, uri: str, text: str, needle: str,
                        offset: int | None = None) -> list[lsp.CompletionItem]:
    """Open ``text`` and complete ``offset`` characters into ``needle`` (by default at its end)."""
    await open_doc(client, uri, text)
    line, col = find(text, needle, offset=len(needle) if offset is None else offset)
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=at(client, text, line, col)))
    return answer.items if answer else []


def units_of(text: str, encoding: str) -> int:
    """The reference length in code units: what the encoder itself produces."""
    codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
    return len(text.encode(codec, "surrogatepass")) // {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]


async def reconfigure(client: LanguageClient, settings: dict, uri: str | None = None, *,
                      tries: int = 3, wait: float = 10.0) -> lsp.PublishDiagnosticsParams:
    """Change the client's ``lockgate`` settings, tell the server, and return the publish (of
    ``uri``, when given) that follows once it has applied them: it asks the client for its
    settings, then publishes every open document again. A publish that does not come within
    ``wait`` seconds (seen once in many runs: a test then waited forever) gets the change told
    again, up to ``tries`` times, so a lost republish fails the test instead of hanging it."""
    client.set_configuration(settings, section="lockgate")
    for attempt in range(tries):
        pending = asyncio.ensure_future(_publish_of(client, uri))
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
        try:
            return await asyncio.wait_for(pending, wait)
        except asyncio.TimeoutError:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


async def _publish_of(client: LanguageClient, uri: str | None) -> lsp.PublishDiagnosticsParams:
    while True:
        params = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if uri is None or params.uri == uri:
            return params
