"""Completion in the middle of a word replaces the whole word: a value (``agent: cla|ude``), a
reference segment (``${pl|an.output.tasks}``, whose rest is kept) and an expression member;
clients that support it get an InsertReplaceEdit whose insert range ends at the cursor."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from lsp_harness import at, find, open_doc
from lsprotocol import types as lsp

from lockgate.dsl.diagnostics import Position, Range
from lockgate.lsp import completion
from lockgate.lsp.positions import LineIndex

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-completion-edits.stratum.yaml"
SPEC = """\
version: 1
contracts:
  Plan:
    tasks: string[]
    ok: boolean
flows:
  entry: main
  main:
    input:
      topic: string
    output:
      from: "${work.output}"
      contract: Plan
    steps:
      - id: plan
        do: "Plan ${input.topic}"
        agent: claude
        out: Plan
        ensure:
          - expr: "result.ok == true"
      - id: work
        do: "Do ${plan.output.tasks}"
        agent: codex
        out: Plan
"""


def apply(client, text: str, edit) -> str:
    rng = edit.range if isinstance(edit, lsp.TextEdit) else edit.replace
    index = LineIndex(text)
    start = index.offset_from_client(rng.start, client.encoding)
    end = index.offset_from_client(rng.end, client.encoding)
    return text[:start] + edit.new_text + text[end:]


async def pick(client, needle: str, offset: int, label: str) -> str:
    """The line of ``needle`` after completing at ``offset`` into it and picking ``label``."""
    line, col = find(SPEC, needle, offset=offset)
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, SPEC, line, col)))
    item = next(i for i in answer.items if i.label == label)
    return apply(client, SPEC, item.text_edit).splitlines()[line].strip()


@pytest.mark.parametrize(("needle", "offset", "label", "line"), [
    ("agent: claude", 7, "codex", "agent: codex"),  # |claude
    ("agent: claude", 10, "claude", "agent: claude"),  # cla|ude
    ("out: Plan\n        ensure", 7, "Plan", "out: Plan"),  # Pl|an
    ("${plan.output.tasks}", 4, "plan", 'do: "Do ${plan.output.tasks}"'),  # ${pl|an: the rest stays
    ("${plan.output.tasks}", 4, "input", 'do: "Do ${input.output.tasks}"'),
    ("${plan.output.tasks}", 16, "tasks", 'do: "Do ${plan.output.tasks}"'),  # ta|sks
    ("result.ok ==", 8, "ok", '- expr: "result.ok == true"'),  # o|k
])
async def test_completion_mid_word_replaces_the_word(client, needle, offset, label, line):
    await open_doc(client, URI, SPEC)
    assert await pick(client, needle, offset, label) == line


async def test_an_unfinished_reference_still_gets_output(client):
    text = SPEC.replace("${plan.output.tasks}", "${pl}")
    await open_doc(client, URI, text)
    line, col = find(text, "${pl}", offset=4)
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=at(client, text, line, col)))
    item = next(i for i in answer.items if i.label == "plan")
    assert apply(client, text, item.text_edit).splitlines()[line].strip() == 'do: "Do ${plan.output}"'


async def test_insert_replace_edit_for_clients_that_take_one():
    """The server passes ``insert_replace`` from the client's capabilities; only ``lines`` of
    the analysis is read here."""
    candidate = completion.Candidate("codex", "value", "codex", Range(Position(0, 7), Position(0, 13)), insert_end=10)
    analysis = SimpleNamespace(lines=LineIndex("agent: claude\n"))
    [item] = completion.to_lsp([candidate], analysis, "utf-16", snippets=True, insert_replace=True).items
    assert isinstance(item.text_edit, lsp.InsertReplaceEdit)
    assert (item.text_edit.insert.end.character, item.text_edit.replace.end.character) == (10, 13)
    [plain] = completion.to_lsp([candidate], analysis, "utf-16", snippets=True).items
    assert isinstance(plain.text_edit, lsp.TextEdit) and plain.text_edit.range.end.character == 13
