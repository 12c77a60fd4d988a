"""Completion end to end: keys with snippets, values, references, expressions."""

from __future__ import annotations

import pytest
from lsp_harness import at, find, open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/complete.stratum.yaml"


async def complete(client, text, line, character):
    await open_doc(client, URI, text)
    result = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, text, line, character))
    )
    return {item.label: item for item in result.items}


async def test_contract_names_for_out(client, review_spec):
    line, col = find(review_spec, "out: Patch", offset=5)
    items = await complete(client, review_spec, line, col)
    assert {"Patch", "Review", "Finding"} <= set(items)


async def test_step_ids_after_input_fields_and_output_fields_in_references(client, review_spec):
    text = review_spec.replace("risk: ${implement.output}", "risk: ${implement.output.")
    line, col = find(text, "${implement.output.", offset=len("${implement.output."))
    items = await complete(client, text, line, col)
    assert set(items) == {"summary", "files", "tests_passed"}
    assert items["files"].detail == "string[]"


async def test_reference_roots(client, review_spec):
    text = review_spec.replace("risk: ${implement.output}", "risk: ${")
    line, col = find(text, "risk: ${", offset=len("risk: ${"))
    items = await complete(client, text, line, col)
    # sign_off is a gate after review: it has no output, and reading it from review is a cycle
    assert {"input", "implement"} <= set(items) and not {"review", "sign_off"} & set(items)


async def test_expression_members_and_builtins(client, review_spec):
    text = review_spec.replace('"len(result.files) > 0"', '"len(result.) > 0"')
    line, col = find(text, "len(result.", offset=len("len(result."))
    assert set(await complete(client, text, line, col)) == {"summary", "files", "tests_passed"}
    text = review_spec.replace('"len(result.files) > 0"', '"le"')
    line, col = find(text, '"le"', offset=3)
    items = await complete(client, text, line, col)
    assert items["len"].detail == "len(x)" and "result" in items


async def test_keys_exclude_present_and_other_constructs(client, review_spec):
    text = review_spec.replace("        attempts: 3\n", "        attempts: 3\n        \n")
    line = text.splitlines().index("        attempts: 3") + 1
    items = await complete(client, text, line, 8)
    assert "after" in items and "ensure" not in items and "do" not in items
    # a do step takes no second construct (LG204); snippet formats: test_lsp_ux_step_keys
    assert not {"gate", "fanout", "run", "set", "evaluate"} & set(items)


async def test_enum_values_and_half_typed_document(client, review_spec):
    # the document does not parse (unclosed flow sequence), but completion uses the last good IR
    await open_doc(client, URI, review_spec)
    broken = review_spec.replace("after: [review]", "after: [rev")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=broken)]))
    line, col = find(broken, "after: [rev", offset=len("after: [rev"))
    result = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, broken, line, col)))
    assert {"implement", "review"} <= {i.label for i in result.items}


async def test_completion_while_typing_uses_the_current_text(client, review_spec):
    # the reference is typed after the analysis: the cursor context comes from the new text
    await open_doc(client, URI, review_spec)
    typed = review_spec.replace("risk: ${implement.output}", "risk: ${implement.output.")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=typed)]))
    line, col = find(typed, "${implement.output.", offset=len("${implement.output."))
    result = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, typed, line, col)))
    assert {i.label for i in result.items} == {"summary", "files", "tests_passed"}
