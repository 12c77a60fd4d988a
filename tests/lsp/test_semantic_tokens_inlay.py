"""Semantic tokens inside references and expressions; inlay hints with reference types; settings."""

from __future__ import annotations

import pytest
from lsp_harness import diagnostics, open_doc, reconfigure
from lsprotocol import types as lsp

from lockgate.lsp.semantic_tokens import TOKEN_TYPES

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/tokens.stratum.yaml"


def decode(data):
    line = char = 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind, _ = data[i:i + 5]
        line += dl
        char = dc if dl else char + dc
        yield line, char, length, TOKEN_TYPES[kind]


async def test_tokens(vscode, review_spec):
    await open_doc(vscode, URI, review_spec)
    tokens = await vscode.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=URI)))
    lines = review_spec.splitlines()
    found = {(lines[line][char:char + length], kind) for line, char, length, kind in decode(tokens.data)}
    assert {("implement", "namespace"), ("len", "function"), ("result", "variable"), ("tests_passed", "property"),
            ("==", "operator"), ("ticket", "property"), ("Patch", "type")} <= found


async def test_tokens_stay_on_unchanged_lines_while_the_yaml_is_broken_mid_edit(client, review_spec):
    uri = "file:///tmp/tokens-broken.stratum.yaml"
    await open_doc(client, uri, review_spec)
    params = lsp.SemanticTokensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    before = list(decode((await client.text_document_semantic_tokens_full_async(params)).data))
    old = '        do: "Review this change for correctness and risk: ${implement.output}"\n'
    edited = review_spec.splitlines().index(old.rstrip("\n"))  # its tokens go; the lines after move down one
    broken = review_spec.replace(old, '        do: "Review ${implement.output}"\n        after: [impl\n')
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=broken)]))
    assert any(d.code.startswith("LG10") for d in await diagnostics(client, uri))  # not YAML any more
    after = list(decode((await client.text_document_semantic_tokens_full_async(params)).data))
    moved = [(line + (line > edited), char, length, kind) for line, char, length, kind in before if line != edited]
    assert after == moved and any(line > edited for line, *_ in after)
    assert any(line < edited for line, *_ in after)


async def test_inlay_hints_follow_settings(fresh_vscode, review_spec):
    vscode = fresh_vscode  # settings change: a server of its own
    await open_doc(vscode, URI, review_spec)
    params = lsp.InlayHintParams(text_document=lsp.TextDocumentIdentifier(uri=URI),
                                 range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=60, character=0)))
    hints = await vscode.text_document_inlay_hint_async(params)
    assert ": Patch" in {h.label for h in hints}
    await reconfigure(vscode, {"inlayHints": False})
    assert list(await vscode.text_document_inlay_hint_async(params)) == []


async def test_lint_setting_drops_warnings(fresh_vscode, review_spec):
    vscode = fresh_vscode  # settings change: a server of its own
    text = review_spec.replace("agent: codex", "agent: gemini")
    assert any(d.code == "LG905" for d in await open_doc(vscode, URI, text))
    params = await reconfigure(vscode, {"agents": ["gemini"], "lint": False})
    assert all(d.severity == lsp.DiagnosticSeverity.Error for d in params.diagnostics)
