"""Quick fixes round-trip into valid specs; the flow graph command returns Mermaid."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/actions.stratum.yaml"


async def fixes(client, text):
    found = await open_doc(client, URI, text)
    end = lsp.Position(line=len(text.splitlines()) + 1, character=0)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), range=lsp.Range(start=lsp.Position(line=0, character=0), end=end),
        context=lsp.CodeActionContext(diagnostics=found)))
    return {a.title: a for a in actions}


async def test_did_you_mean_and_contract_stub(client, review_spec):
    text = review_spec.replace("out: Patch", "out: Ptach")
    actions = await fixes(client, text)
    fixed = apply_edits(client, text, actions["Change to 'Patch'"].edit.document_changes[0].edits)
    assert fixed == review_spec
    stubbed = apply_edits(client, text, actions["Create contract 'Ptach'"].edit.document_changes[0].edits)
    assert "Ptach" in load(stubbed).ir.contracts


async def test_max_rounds_and_missing_after(vscode, review_spec):
    text = review_spec.replace("    max_rounds: 2\n", "").replace("        after: [review]\n", "        after: [review]\n        when: \"result.implement.tests_passed\"\n")
    text = text.replace("        after: [review]\n", "")
    actions = await fixes(vscode, text)
    with_rounds = apply_edits(vscode, text, actions["Add max_rounds to flow 'change'"].edit.document_changes[0].edits)
    assert not any(d.code == "LG506" for d in load(with_rounds).diagnostics)
    ordered = apply_edits(vscode, text, actions["Run after 'implement'"].edit.document_changes[0].edits)
    assert not any(d.code == "LG904" for d in load(ordered).diagnostics)


async def test_show_flow_graph(vscode, review_spec):
    await open_doc(vscode, URI, review_spec)
    result = await vscode.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="lockgate.showFlowGraph", arguments=[URI, "change"]))
    assert result["format"] == "mermaid" and result["text"].startswith("flowchart TD")
    assert "implement" in result["text"]


INLINE = """version: 1
contracts: {}
flows:
  entry: main
  main: {input: {}, output: {from: "${a.output}", contract: Plan}, steps: [{id: a, do: "plan", out: Plan}]}
"""


async def test_quick_fixes_on_inline_blocks_keep_the_spec_parsing(vscode):
    """`contracts: {}` becomes a block holding the stub; a flow written inline gets no
    max_rounds line under it (both fixes inserted lines that broke the YAML: review s8-r8)."""
    actions = await fixes(vscode, INLINE)
    stubbed = apply_edits(vscode, INLINE, actions["Create contract 'Plan'"].edit.document_changes[0].edits)
    assert stubbed.startswith("version: 1\ncontracts:\n  Plan:\n    result: string\nflows:")
    assert not [d for d in load(stubbed).diagnostics if d.severity.name == "ERROR"]
    gated = INLINE.replace('steps: [{id: a, do: "plan", out: Plan}]',
                           'steps: [{id: a, do: "plan", out: Plan}, {id: g, after: [a], gate: '
                           '{on_approve: null, on_revise: a, on_kill: null}}]')
    actions = await fixes(vscode, gated.replace("contracts: {}", "contracts: {Plan: {result: string}}"))
    assert not [title for title in actions if title.startswith("Add max_rounds")]


async def test_show_flow_graph_of_an_unknown_flow_is_an_error(vscode, review_spec):
    await open_doc(vscode, URI, review_spec)
    with pytest.raises(Exception, match="no flow named 'nope'; flows: change"):
        await vscode.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="lockgate.showFlowGraph", arguments=[URI, "nope"]))
