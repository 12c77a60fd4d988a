"""Evaluate steps in the editor: ``evaluate.in`` is a template like ``do`` and ``with`` (hover,
definition, references, rename, semantic tokens), an evaluate step's ``out`` types its output,
and completion offers an evaluate step."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, at, completion_at, find, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.loader import load
from lockgate.lsp.semantic_tokens import TOKEN_TYPES

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-evaluate.stratum.yaml"
DOC = lsp.TextDocumentIdentifier(uri=URI)
SPEC = """\
version: 1
contracts:
  Plan:
    tasks: string[]
  Verdict:
    score: number
    notes: string
  Scored:
    status: string
    children: array
    reason: string
    score: number?
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${report.output}"
      contract: Verdict
    steps:
      - id: plan
        do: "Plan ${input.topic}"
        out: Plan
      - id: score
        evaluate:
          command: "./score.sh"
          in: "${plan.output.tasks}"
          timeout_ms: 60000
        out: Scored
      - id: report
        do: "Report ${score.output}"
        out: Verdict
"""


def pos(client, needle: str, offset: int) -> lsp.Position:
    return at(client, SPEC, *find(SPEC, needle, offset=offset))


async def test_evaluate_in_is_navigable(client):
    await open_doc(client, URI, SPEC)
    in_ref = pos(client, 'in: "${plan', 7)
    hover = await client.text_document_hover_async(lsp.HoverParams(text_document=DOC, position=in_ref))
    assert "string[]" in hover.contents.value
    found = await client.text_document_definition_async(lsp.DefinitionParams(text_document=DOC, position=in_ref))
    assert [d.range.start.line for d in found] == [find(SPEC, "id: plan")[0]]
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=DOC, position=pos(client, "id: plan", 5), context=lsp.ReferenceContext(include_declaration=True)))
    assert find(SPEC, 'in: "${plan')[0] in {r.range.start.line for r in refs}


async def test_rename_reaches_evaluate_in(client):
    await open_doc(client, URI, SPEC)
    edit = await client.text_document_rename_async(lsp.RenameParams(
        text_document=DOC, position=pos(client, "id: plan", 5), new_name="planning"))
    renamed = apply_edits(client, SPEC, edit.document_changes[0].edits)
    assert 'in: "${planning.output.tasks}"' in renamed
    assert load(renamed).ok


async def test_evaluate_in_has_semantic_tokens(vscode):
    await open_doc(vscode, URI, SPEC)
    tokens = await vscode.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(text_document=DOC))
    line_no = find(SPEC, 'in: "${plan')[0]
    line = SPEC.splitlines()[line_no]
    found, current, char = set(), 0, 0
    data = tokens.data
    for i in range(0, len(data), 5):
        current += data[i]
        char = data[i + 1] if data[i] else char + data[i + 1]
        if current == line_no:
            found.add((line[char:char + data[i + 2]], TOKEN_TYPES[data[i + 3]]))
    assert ("plan", "namespace") in found


async def test_evaluate_output_has_its_out_type(client):
    await open_doc(client, URI, SPEC)
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=DOC, position=pos(client, "${score.output}", 3)))
    assert "Scored" in hover.contents.value
    text = SPEC.replace("${score.output}", "${score.output.")
    found = await completion_at(client, URI.replace("ux-", "ux-member-"), text, "${score.output.")
    assert {i.label for i in found} == {"status", "children", "reason", "score"}


async def test_an_evaluate_step_snippet_is_offered(vscode):
    text = SPEC + "      - \n"
    await open_doc(vscode, URI, text)
    line = len(text.splitlines()) - 1
    answer = await vscode.text_document_completion_async(lsp.CompletionParams(
        text_document=DOC, position=lsp.Position(line=line, character=8)))
    snippet = next(i for i in answer.items if i.label == "evaluate step")
    assert "evaluate:" in snippet.text_edit.new_text and "timeout_ms:" in snippet.text_edit.new_text
