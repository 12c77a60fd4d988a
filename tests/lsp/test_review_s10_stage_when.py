"""A fanout stage's ``when`` reads the flow's step outputs (``result.plan.strict``, §5.4), so
rename, definition and references of step ``plan`` include it (review s10 F5 #2); a stage's
``ensure`` binds ``result`` to the stage's own output and is left alone."""

from __future__ import annotations

import pytest
from lsp_harness import apply_edits, at, covered, find, open_doc
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from lockgate.dsl.loader import load

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/review-s10-stage-when.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Plan:
    files: string[]
    strict: boolean
  Note:
    plan: string
flows:
  entry: main
  main:
    input: {goal: string}
    output: {from: "${review.output[0]}", contract: Note}
    steps:
      - id: plan
        do: "Plan ${input.goal}"
        out: Plan
      - id: review
        after: [plan]
        fanout:
          over: "${plan.output.files}"
          concurrency: 2
          isolation: none
          require: all
          merge: sequential
          steps:
            - do: "Review ${item}"
              when: "result.plan.strict == true"
              out: Note
              ensure:
                - expr: "result.plan != ''"
"""
DOC = lsp.TextDocumentIdentifier(uri=URI)


def _position(client, needle: str, offset: int) -> lsp.Position:
    return at(client, SPEC, *find(SPEC, needle, offset=offset))


async def test_stage_when_is_a_reference_of_the_step(client):
    await open_doc(client, URI, SPEC)
    [target] = await client.text_document_definition_async(
        lsp.DefinitionParams(text_document=DOC, position=_position(client, "result.plan.strict", 8)))
    assert target.range.start.line == SPEC.splitlines().index("      - id: plan")
    refs = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=DOC, position=_position(client, "id: plan", 5), context=lsp.ReferenceContext(include_declaration=True)))
    lines = sorted(r.range.start.line for r in refs)
    assert lines[-1] == SPEC.splitlines().index('              when: "result.plan.strict == true"')
    assert len(refs) == 4 and {covered(client, SPEC, r.range) for r in refs} == {"plan"}


async def test_rename_step_renames_the_stage_when(client):
    await open_doc(client, URI, SPEC)
    edit = await client.text_document_rename_async(
        lsp.RenameParams(text_document=DOC, position=_position(client, "id: plan", 5), new_name="design"))
    renamed = apply_edits(client, SPEC, edit.document_changes[0].edits)
    assert 'when: "result.design.strict == true"' in renamed
    assert "expr: \"result.plan != ''\"" in renamed  # the stage's own output field
    assert load(renamed).ok


async def test_rename_refuses_a_name_the_stage_when_cannot_spell(vscode):
    await open_doc(vscode, URI, SPEC)
    with pytest.raises(JsonRpcException, match="cannot be written in an expression"):
        await vscode.text_document_rename_async(
            lsp.RenameParams(text_document=DOC, position=_position(vscode, "id: plan", 5), new_name="the-plan"))
