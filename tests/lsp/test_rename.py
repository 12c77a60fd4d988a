"""Rename: every occurrence, refusal of invalid and colliding names."""

from __future__ import annotations

import re

import pytest
from conftest import EXAMPLES
from lsp_harness import apply_edits, at, find, open_doc
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/rename.stratum.yaml"


async def test_rename_step_everywhere(client, review_spec):
    await open_doc(client, URI, review_spec)
    line, col = find(review_spec, "id: implement", offset=5)
    doc = lsp.TextDocumentIdentifier(uri=URI)
    prepared = await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(text_document=doc, position=at(client, review_spec, line, col)))
    assert prepared.placeholder == "implement"
    edit = await client.text_document_rename_async(lsp.RenameParams(text_document=doc, position=at(client, review_spec, line, col), new_name="build"))
    renamed = apply_edits(client, review_spec, edit.document_changes[0].edits)
    assert "implement" not in renamed.replace("Implement ticket", "")
    assert "${build.output}" in renamed and "on_revise: build" in renamed
    from lockgate.dsl.loader import load

    assert load(renamed).ok


@pytest.mark.parametrize("name, reason", [
    ("review", "already exists"), ("Bad Name", "not a valid"),
    # plain YAML scalars that are not strings: the renamed key would be a bool or null
    ("true", "YAML reads 'true' as true"), ("off", "as false"), ("null", "as null"), ("yes", "as true"),
    ("input", "names the flow's input"),  # ${input.output} would no longer name the step
])
async def test_rename_refusals(vscode, review_spec, name, reason):
    await open_doc(vscode, URI, review_spec)
    line, col = find(review_spec, "id: implement", offset=5)
    with pytest.raises(JsonRpcException, match=reason):
        await vscode.text_document_rename_async(lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(vscode, review_spec, line, col), new_name=name))


@pytest.mark.parametrize("needle, offset, name", [
    ("id: implement", 5, "build\n"), ("  Patch:", 3, "Change\n"), ("  change:", 3, "alter\n"),
    ("ticket: string", 1, "issue\n"), ("id: implement", 5, "build\r\n"),
])
async def test_rename_refuses_a_name_ending_in_a_newline(vscode, review_spec, needle, offset, name):
    """A pattern's ``$`` also matches before a final newline: ``build\\n`` passed the check and
    its edits broke the spec (review s8-r3 #2)."""
    await open_doc(vscode, URI, review_spec)
    line, col = find(review_spec, needle, offset=offset)
    shown = name.replace("\r", "\\r").replace("\n", "\\n")
    with pytest.raises(JsonRpcException, match=re.escape(f"'{shown}' is not a valid")):
        await vscode.text_document_rename_async(lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(vscode, review_spec, line, col), new_name=name))


SUBFLOW = (EXAMPLES / "deploy-subflow.stratum.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("where", [("artifact: string", 1, 0), ("artifact: \"${build", 0, 2)], ids=["definition", "call-site"])
async def test_rename_flow_input_renames_the_call_sites_with_keys(client, where):
    # the keys of a `run` step's `with` are the called flow's input fields: renaming the field
    # from its definition or from a call site must rename both, or the call passes an unknown input
    needle, occurrence, offset = where
    await open_doc(client, URI, SUBFLOW)
    line, col = find(SUBFLOW, needle, occurrence, offset)
    doc = lsp.TextDocumentIdentifier(uri=URI)
    prepared = await client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(text_document=doc, position=at(client, SUBFLOW, line, col)))
    assert prepared.placeholder == "artifact"
    edit = await client.text_document_rename_async(
        lsp.RenameParams(text_document=doc, position=at(client, SUBFLOW, line, col), new_name="bundle"))
    renamed = apply_edits(client, SUBFLOW, edit.document_changes[0].edits)
    assert "bundle: \"${build.output.artifact}\"" in renamed and "${input.bundle}" in renamed
    assert "      bundle: string" in renamed and "Build:\n    artifact: string" in renamed
    from lockgate.dsl.loader import load

    assert [d.code for d in load(renamed).diagnostics] == [d.code for d in load(SUBFLOW).diagnostics]
