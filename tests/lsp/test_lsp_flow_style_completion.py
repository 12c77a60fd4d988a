"""Completion inside one-line flow collections: the keys of a flow-style step for its kind
(inserted on the line, not as block snippets), and the values of keys inside ``{...}`` and
``[...]`` as block style offers them."""

from __future__ import annotations

import pytest
from lsp_harness import STEPS_HEAD, apply_edits, completion_at
from lsprotocol import types as lsp

pytestmark = pytest.mark.asyncio(loop_scope="session")

URI = "file:///tmp/flow-style-completion.stratum.yaml"
SPEC = STEPS_HEAD + """\
      - id: plan
        do: "Plan ${input.topic}"
        out: Verdict
      - STEP
"""
DO_KEYS = {"after", "when", "out", "ensure", "attempts", "iterate", "budget", "on_fail"}


async def items(client, step: str, needle: str) -> dict[str, lsp.CompletionItem]:
    """The items offered at the end of ``needle`` in a spec whose last step is ``step``."""
    text = SPEC.replace("- STEP", step)
    return {i.label: i for i in await completion_at(client, URI, text, needle)}


async def test_keys_after_the_last_comma_of_a_flow_style_step(client):
    step = '- {id: a, agent: claude, do: "x", }'
    found = await items(client, step, '"x", ')
    assert set(found) == DO_KEYS  # the do step's keys, less those written
    text = SPEC.replace("- STEP", step)
    edit = found["out"].text_edit
    edited = apply_edits(client, text, [edit]).replace("$0", "")  # the snippet's final cursor stop
    assert '      - {id: a, agent: claude, do: "x", out: }\n' in edited  # on the line, no block snippet


async def test_a_partial_key_sees_the_keys_after_it(client):
    found = await items(client, '- {id: a, ag, do: "x, y: z"}', "{id: a, ag")
    assert set(found) == DO_KEYS | {"agent"}


async def test_a_step_without_construct_gets_collection_brackets_and_no_snippets(client):
    found = await items(client, "- {id: a, }", "{id: a, ")
    assert {"do", "gate", "evaluate", "after"} <= set(found)
    assert not [label for label in found if label.endswith(" step")]
    assert found["gate"].text_edit.new_text.startswith("gate: {")
    assert found["after"].text_edit.new_text.startswith("after: [")


async def test_values_inside_a_flow_mapping_value(client):
    step = "- id: check\n        gate: {on_approve: , on_kill: null}"
    assert set(await items(client, step, "{on_approve: ")) == {"plan", "null"}
    step = '- id: each\n        fanout: {over: "${input.topic}", isolation: }'
    assert set(await items(client, step, "isolation: ")) == {"worktree", "none"}


async def test_keys_inside_a_nested_flow_mapping(client):
    found = await items(client, '- {id: a, do: "x", budget: {ms: 3, }}', "{ms: 3, ")
    assert set(found) == {"usd", "tokens", "dispatches"}


async def test_a_quoted_hash_in_a_flow_sequence_is_not_a_comment(client):
    step = '- id: b\n        do: "x"\n        after: ["a # b", ]'
    assert set(await items(client, step, '"a # b", ')) == {"plan"}
