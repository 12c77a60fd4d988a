"""Step-key completion follows the step's construct: once a step has ``do``, ``evaluate``,
``gate``... only the keys that construct allows are offered (the schema's per-kind definitions,
the same rule as LG205), and no second construct or step snippet."""

from __future__ import annotations

import pytest
from lsp_harness import STEPS_HEAD, open_doc
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/ux-step-keys.stratum.yaml"


async def items_after(client, step: str) -> dict[str, lsp.CompletionItem]:
    """The items offered on a blank line at the end of ``step`` (a step's lines)."""
    text = STEPS_HEAD + step + "        \n"
    await open_doc(client, URI, text)
    line = text.count("\n") - 1
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI), position=lsp.Position(line=line, character=8)))
    return {i.label: i for i in answer.items}


async def keys_after(client, step: str) -> set[str]:
    return set(await items_after(client, step))


async def test_do_step_keys(client):
    step = '      - id: plan\n        do: "Plan ${input.topic}"\n        out: Verdict\n'
    assert await keys_after(client, step) == {"after", "when", "agent", "ensure", "attempts", "iterate", "budget", "on_fail"}


async def test_evaluate_step_keys(client):
    step = '      - id: plan\n        evaluate:\n          command: "./score.sh"\n          timeout_ms: 60000\n'
    assert await keys_after(client, step) == {"after", "when", "out"}


async def test_gate_step_keys(client):
    step = "      - id: plan\n        gate:\n          on_approve: null\n"
    assert await keys_after(client, step) == {"after", "when"}


async def test_a_step_without_construct_gets_every_key_and_the_snippets(client):
    found = await keys_after(client, "      - id: plan\n")
    assert {"do", "evaluate", "agent", "with", "do step", "evaluate step"} <= found


async def test_construct_keys_are_snippets_in_a_step_without_construct(client):
    # what tests/lsp/test_completion.py checked on a do step, where a gate is no longer offered
    gate = (await items_after(client, "      - id: plan\n"))["gate"]
    assert gate.insert_text_format == lsp.InsertTextFormat.Snippet and "on_revise" in gate.text_edit.new_text
