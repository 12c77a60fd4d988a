"""A client without snippet support gets every snippet item as plain text: each placeholder
replaced by its default (nested ones too, as in the fanout step's ``${6:Handle \\${item\\}}``),
no tab stops, no snippet escapes."""

from __future__ import annotations

import re

import pytest
from lsp_harness import at, open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/plain-text-snippets.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Verdict:
    score: number
  CONTRACT
flows:
  entry: main
  main:
    input:
      topic: string
    steps:
      - id: plan
        do: "Plan ${input.topic}"
        out: Verdict
        when: "WHEN"
        ensure:
          - ENSURE
      - STEP
      - id: sub
        run: other
        with:
          WITH
  FLOW
  other:
    input:
      topic: string
      style: string
    output:
      from: "${w.output}"
      contract: Verdict
    steps:
      - id: w
        KEY
"""
PLACES = ["CONTRACT", "WHEN", "ENSURE", "STEP", "WITH", "FLOW", "KEY"]
SNIPPET_SYNTAX = re.compile(r"\$\d|\$\{\d|\\[$}\\]")


async def items_at(client, place: str) -> list[lsp.CompletionItem]:
    """The items offered where ``place`` stands in SPEC (the other places left blank)."""
    text = SPEC.replace(place, "")
    for other in PLACES:
        text = text.replace(other, "true" if other == "WHEN" else "")
    line, col = next((n, row.index(place)) for n, row in enumerate(SPEC.splitlines()) if place in row)
    await open_doc(client, URI, text)
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, text, line, col)))
    return list(answer.items) if answer else []


@pytest.mark.parametrize("place", PLACES)
async def test_no_snippet_syntax_for_a_client_without_snippets(no_snippets, place):
    found = await items_at(no_snippets, place)
    assert found
    for item in found:
        assert item.insert_text_format in (None, lsp.InsertTextFormat.PlainText), item.label
        assert not SNIPPET_SYNTAX.search(item.text_edit.new_text), (item.label, item.text_edit.new_text)


async def test_the_fanout_step_keeps_its_reference_as_text(no_snippets):
    fanout = {i.label: i for i in await items_at(no_snippets, "STEP")}["fanout step"]
    assert 'over: "${input.items}"' in fanout.text_edit.new_text
    assert 'do: "Handle ${item}"' in fanout.text_edit.new_text


async def test_a_client_with_snippets_still_gets_them(vscode):
    fanout = {i.label: i for i in await items_at(vscode, "STEP")}["fanout step"]
    assert fanout.insert_text_format == lsp.InsertTextFormat.Snippet
    assert "${6:Handle \\${item\\}}" in fanout.text_edit.new_text
